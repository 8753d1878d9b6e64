import { natsAuthorization, type NatsCredentials } from '@svc/bus';
import { launchNatsServer, type NatsServerProcess as LaunchedNatsServer } from '@svc/nats-server';

/** A nats-server with svc's users. */
export type NatsServerProcess = LaunchedNatsServer<NatsCredentials>;

/**
 * A throwaway `nats-server -js` for one test file: random port, temporary store directory,
 * removed by `stop()`, credentials for every service (`server.credentials`; a client without
 * them is refused). A missing binary fails with the command that installs it.
 */
export function startNatsServer(options: { port?: number; credentials?: NatsCredentials } = {}): Promise<NatsServerProcess> {
  return launchNatsServer({ ...(options.port === undefined ? {} : { port: options.port }), authorization: natsAuthorization(options.credentials) });
}
