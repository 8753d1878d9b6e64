import { launchNatsServer, type NatsServerOptions, type NatsServerProcess } from '@svc/bus';

export type { NatsServerProcess } from '@svc/bus';

/**
 * A throwaway `nats-server -js` for one test file: random port, temporary store directory,
 * removed by `stop()`, credentials for every service (`server.credentials`; a client without
 * them is refused). A missing binary fails with the command that installs it.
 */
export function startNatsServer(options: Pick<NatsServerOptions, 'port' | 'credentials'> = {}): Promise<NatsServerProcess> {
  return launchNatsServer(options);
}
