import fp from 'fastify-plugin';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { SVC_VERSION } from '@svc/service-kit';

/** The OpenAPI 3.1 document, generated from the route schemas, at /openapi.json; a UI at /docs. */
export const openapiPlugin = fp(
  async (app) => {
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: 'svc control plane',
          version: SVC_VERSION,
          description: 'Runs AI coding agents in sandboxes and lets people watch and steer them. Every error is an APIError.',
        },
        components: {
          securitySchemes: {
            userJwt: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'An OIDC JWT of the configured issuer.' },
            workerToken: { type: 'http', scheme: 'bearer', description: 'The per-worker token the sidecar reads from /var/run/svc/token.' },
          },
        },
      },
      // Routes say who may call them in `config.auth`; the document says it as `security`.
      transform: ({ schema, url, route }) => {
        const auth = route.config?.auth ?? 'user';
        const security = auth === 'public' ? [] : [{ [auth === 'worker' ? 'workerToken' : 'userJwt']: [] }];
        return { schema: { ...schema, security } as typeof schema, url };
      },
    });
    // The UI's own routes are public documentation, like the document itself.
    app.addHook('onRoute', (route) => {
      if (route.url === '/docs' || route.url.startsWith('/docs/')) route.config = { ...route.config, auth: 'public' };
    });
    await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { docExpansion: 'list' } });
    app.get('/openapi.json', { schema: { hide: true }, config: { auth: 'public' } }, async () => app.swagger());
  },
  { name: 'svc-openapi', fastify: '5.x' },
);
