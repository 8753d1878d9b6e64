import { readNatsCredentialsDir, serveHealthProbes } from '@svc/bus';
import { NatsServerNotFoundError } from '@svc/nats-server';
import {
  booleanSetting,
  choiceSetting,
  ConfigError,
  createGracefulShutdown,
  createLogger,
  integerSetting,
  optionalStringSetting,
  readConfig,
  redactUrl,
  startTracing,
  stringSetting,
  tracingSettings,
} from '@svc/service-kit';
import { CONSOLE_SIGN_IN_CODE_PARAM, LOCAL_SIGN_IN_CODE_FILE } from '@svc/protocol';
import { gatewaySettings } from '@svc/gateway';
import { sessionSettings } from '@svc/session';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startLocalStack } from './index.js';

/** The web console as `npx nx run @svc/console:build` leaves it in this workspace (SVC_CONSOLE_DIR overrides). */
const WORKSPACE_CONSOLE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../console/dist');

const localSettings = {
  stateDir: stringSetting('SVC_STATE_DIR', { default: '.svc' }),
  databaseUrl: optionalStringSetting('SVC_DATABASE_URL'),
  natsUrl: optionalStringSetting('SVC_NATS_URL'),
  /** With SVC_NATS_URL: a directory with a file per NATS user (gateway, event-ingest, control, session, operator) holding its password. */
  natsCredentialsDir: optionalStringSetting('SVC_NATS_CREDENTIALS_DIR'),
  logLevel: choiceSetting('SVC_LOG_LEVEL', ['trace', 'debug', 'info', 'warn', 'error', 'silent'], { default: 'warn' }),
  /** Start a demo session (off in the Helm chart's single mode). */
  demo: booleanSetting('SVC_DEMO', { default: true }),
  /** A port for the Kubernetes probes `/healthz` and `/readyz` (0: none). */
  healthPort: integerSetting('SVC_HEALTH_PORT', { default: 0, min: 0, max: 65535 }),
  killGraceMs: sessionSettings.killGraceMs,
};

function readSettings() {
  try {
    return {
      config: readConfig(localSettings),
      tracing: readConfig(tracingSettings),
      // The local stack runs its own OIDC issuer unless one is configured.
      gateway: readConfig(gatewaySettings, {
        SVC_LOCAL_ISSUER: process.env['SVC_OIDC_ISSUER'] ? 'false' : 'true',
        SVC_CONSOLE_DIR: WORKSPACE_CONSOLE,
        // Decision links of notifications: signed with a key of this run's unless one is given.
        SVC_DECISION_LINK_KEY: randomBytes(32).toString('base64url'),
        ...process.env,
      }),
    };
  } catch (err) {
    process.stderr.write(`${err instanceof ConfigError ? err.message : String(err)}\n`);
    process.exit(1);
  }
}

const { config, tracing: tracingConfig, gateway } = readSettings();

const logger = createLogger({ name: 'svc-local', level: config.logLevel });
// Stopping the sandboxes may take their kill grace: the deadline leaves room for it.
const shutdown = createGracefulShutdown({ logger, timeoutMs: config.killGraceMs + 10_000 });
shutdown.installSignalHandlers();
// One process, one tracer: the spans of every service in it name `svc-local` (docs/tracing.md).
const tracing = await startTracing('svc-local', tracingConfig);
shutdown.add({ name: 'tracing', close: () => tracing.shutdown() });

// Starting takes a few seconds (nats-server, the store's migrations, a sandbox): say so first.
process.stdout.write('svc local stack: starting nats-server, the store, the services and a demo session…\n');
try {
  const natsCredentials = config.natsCredentialsDir ? await readNatsCredentialsDir(config.natsCredentialsDir) : undefined;
  const stack = await startLocalStack({ ...config, natsCredentials, gateway, logger });
  shutdown.add({ name: 'local stack', close: () => stack.stop() });
  if (config.healthPort) {
    const probes = await serveHealthProbes({ port: config.healthPort });
    probes.watch(stack.nc);
    probes.started();
    shutdown.add({ name: 'probes', close: () => probes.close() });
  }
  process.stdout.write(
    [
      'svc local stack is up.',
      stack.localSignInCode
        ? `  console:  ${stack.gatewayUrl}/#${CONSOLE_SIGN_IN_CODE_PARAM}=${stack.localSignInCode}   (signs you in as the local user: watch the demo, approve from the browser)`
        : `  console:  ${stack.gatewayUrl}/   (watch the demo, approve from the browser)`,
      `  gateway:  ${stack.gatewayUrl}   (API docs: ${stack.gatewayUrl}/docs)`,
      `  NATS:     ${stack.natsUrl}${config.natsUrl ? '' : ' (started here)'}`,
      `  store:    ${stack.store === 'pglite' ? `embedded PGlite in ${config.stateDir}/pglite` : redactUrl(config.databaseUrl ?? '')}`,
      '  services: event-ingest, control, session, gateway',
      ...(gateway.localIssuer
        ? [
            `A user token (built-in issuer, for the sign-in code in ${path.join(config.stateDir, LOCAL_SIGN_IN_CODE_FILE)}; \`npm run svc -- login\` reads it too):`,
            `  TOKEN=$(curl -s -H 'content-type: application/json' -d "{\\"code\\":\\"$(cat ${path.join(config.stateDir, LOCAL_SIGN_IN_CODE_FILE)})\\"}" ${stack.gatewayUrl}/v1/local/token | node -pe 'JSON.parse(require("fs").readFileSync(0)).token')`,
            `  curl -H "Authorization: Bearer $TOKEN" ${stack.gatewayUrl}/v1/status`,
          ]
        : []),
      ...(stack.demo
        ? [
            `A demo session runs the demo agent under a real sidecar in a local sandbox: session ${stack.demo.id}, demo worker: ${stack.demo.worker_id}`,
            `  events:  curl -H "Authorization: Bearer $TOKEN" ${stack.gatewayUrl}/v1/workers/${stack.demo.worker_id}/sdk-events`,
            `  live:    WebSocket ${stack.gatewayUrl.replace('http', 'ws')}/v1/workers/${stack.demo.worker_id}/sdk-events/stream?after_id=0 (same header)`,
            `  It asks to write hello.txt: curl -H "Authorization: Bearer $TOKEN" ${stack.gatewayUrl}/v1/workers/${stack.demo.worker_id}/control/requests?state=open`,
            `  allow:   curl -H "Authorization: Bearer $TOKEN" -H 'content-type: application/json' -d '{"request_id":"<request_id>","decision":"allow"}' ${stack.gatewayUrl}/v1/workers/${stack.demo.worker_id}/control`,
            `  another: curl -H "Authorization: Bearer $TOKEN" -H 'content-type: application/json' -d '{"template":"demo"}' ${stack.gatewayUrl}/v1/sessions`,
            `  watch it and answer its prompt in your terminal: npm run svc -- login && npm run svc -- attach ${stack.demo.worker_id}`,
          ]
        : []),
      ...(stack.demoRefused ? [`The demo session could not start: ${stack.demoRefused}`] : []),
      'Press Ctrl+C to stop.',
      '',
    ].join('\n'),
  );
} catch (err) {
  if (err instanceof NatsServerNotFoundError) {
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  }
  throw err;
}
