import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import SwaggerParser from '@apidevtools/swagger-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFile, stat } from 'node:fs/promises';
import { createLocalIssuer, type LocalIssuer } from '@svc/auth';
import { LOCAL_SIGN_IN_CODE_FILE } from '@svc/protocol';
import { startGatewayFixture, testRoutes, type GatewayFixture } from '../test/fixture.js';

describe('gateway OpenAPI — generated from the routes', () => {
  let gw: GatewayFixture;
  let stateDir: string;
  let localIssuer: LocalIssuer;
  beforeAll(async () => {
    stateDir = await mkdtemp(path.join(tmpdir(), 'svc-openapi-'));
    localIssuer = await createLocalIssuer({ stateDir, issuer: 'http://127.0.0.1:8080' });
    gw = await startGatewayFixture({}, [testRoutes], { localIssuer });
  });
  afterAll(async () => {
    await gw?.stop();
    await rm(stateDir, { recursive: true, force: true });
  });

  it('/openapi.json is a valid OpenAPI 3.1 document, served without credentials', async () => {
    const response = await gw.app.inject({ url: '/openapi.json' });
    expect(response.statusCode).toBe(200);
    const document = response.json();
    expect(document.openapi).toBe('3.1.0');
    await expect(SwaggerParser.validate(structuredClone(document))).resolves.toBeTruthy();
  });

  it('every registered route is in the document, with the credential it takes', async () => {
    const document = gw.app.swagger() as { paths: Record<string, Record<string, { security?: unknown[] }>> };
    const documented = gw.app.registeredRoutes.filter(
      (route) => !route.hidden && route.method !== 'HEAD' && route.method !== 'OPTIONS' && route.url !== '/docs' && !route.url.startsWith('/docs/'),
    );
    expect(documented.length).toBeGreaterThan(5);
    for (const route of documented) {
      // A wildcard (`/files/*`: a path of many segments) is `{*}` in the document.
      const openapiPath = route.url.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}').replace(/\*$/, '{*}');
      const operation = document.paths[openapiPath]?.[route.method.toLowerCase()];
      expect(operation, `${route.method} ${route.url}`).toBeDefined();
    }
    expect(document.paths['/v1/status']!['get']!.security).toEqual([{ userJwt: [] }]);
    expect(document.paths['/v1/workers/{id}/test-sidecar']!['get']!.security).toEqual([{ workerToken: [] }]);
    expect(document.paths['/healthz']!['get']!.security).toEqual([]);
  });

  it('the events list documents both cursors: after_id forwards, before_id (an id or "end") backwards', async () => {
    const document = (await gw.app.inject({ url: '/openapi.json' })).json() as {
      paths: Record<string, Record<string, { parameters: Array<{ name: string; in: string; schema: unknown; description?: string }> }>>;
    };
    const parameters = document.paths['/v1/workers/{id}/sdk-events']!['get']!.parameters;
    expect(parameters.filter((p) => p.in === 'query').map((p) => p.name)).toEqual(expect.arrayContaining(['after_id', 'before_id', 'limit', 'types']));
    const beforeId = parameters.find((p) => p.name === 'before_id')!;
    expect(JSON.stringify(beforeId)).toContain('"end"');
  });

  it('the UI is served at /docs without credentials', async () => {
    const response = await gw.app.inject({ url: '/docs/' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/text\/html/);
  });

  it("local issuer — a token for the stack's sign-in code (a 0600 file of its state directory) or to renew a valid one, never for being a loopback caller", async () => {
    const file = path.join(stateDir, LOCAL_SIGN_IN_CODE_FILE);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const code = (await readFile(file, 'utf8')).trim();
    expect(code).toBe(localIssuer.signInCode);
    expect(code.length).toBeGreaterThanOrEqual(43);

    const token = (request: { payload?: object; authorization?: string }) =>
      gw.app.inject({
        method: 'POST',
        url: '/v1/local/token',
        remoteAddress: '127.0.0.1',
        ...(request.payload ? { payload: request.payload } : {}),
        ...(request.authorization ? { headers: { authorization: request.authorization } } : {}),
      });
    for (const refused of [{}, { payload: { code: 'x'.repeat(code.length) } }, { payload: { code: code.slice(1) } }, { authorization: 'Bearer not.a.token' }]) {
      const answer = await token(refused);
      expect(answer.statusCode, JSON.stringify(refused)).toBe(403);
      expect(answer.json()).toMatchObject({ code: 'forbidden', message: expect.stringContaining(LOCAL_SIGN_IN_CODE_FILE) });
      expect(answer.body).not.toContain(code);
    }
    expect((await token({ payload: { code: 42 } })).statusCode).toBe(400);
    const signedIn = await token({ payload: { code } });
    expect(signedIn.statusCode).toBe(200);
    expect(signedIn.json()).toMatchObject({ token_type: 'Bearer', expires_in: expect.any(Number) });
    // Renewal needs a sign-in made with the code: a valid token without one (this fixture's test issuer's) is refused.
    expect((await token({ authorization: `Bearer ${await gw.userToken()}` })).statusCode).toBe(403);
  });
});
