import { launchNatsServer, type NatsServerProcess } from '@svc/bus';

export type { NatsServerProcess } from '@svc/bus';

/**
 * A throwaway `nats-server -js` for one test file: random port, temporary store directory,
 * removed by `stop()`. A missing binary fails with the command that installs it.
 */
export function startNatsServer(): Promise<NatsServerProcess> {
  return launchNatsServer();
}
