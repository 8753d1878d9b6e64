import { connectBus, type NatsConnection } from '@svc/bus';
import { createLogger, type Logger } from '@svc/service-kit';
import { startNatsServer } from './nats.js';

export interface BusFixture {
  nc: NatsConnection;
  url: string;
  /** A silent logger for the code under test. */
  logger: Logger;
  stop(): Promise<void>;
}

/** A throwaway nats-server and a connection to it, for one test file. */
export async function startBusFixture(): Promise<BusFixture> {
  const server = await startNatsServer();
  const logger = createLogger({ name: 'test', level: 'silent' });
  const nc = await connectBus({ servers: server.url, name: 'test', logger, credentials: server.credentials.operator });
  return {
    nc,
    url: server.url,
    logger,
    async stop() {
      await nc.close();
      await server.stop();
    },
  };
}
