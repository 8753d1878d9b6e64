import { connectBus, openWorkerRecords, type NatsConnection } from '@svc/bus';
import type { WorkerRecord } from '@svc/protocol';
import { createLogger, type Logger } from '@svc/service-kit';
import { startNatsServer } from './nats.js';

export interface BusFixture {
  nc: NatsConnection;
  url: string;
  /** A silent logger for the code under test. */
  logger: Logger;
  /** Records a worker (running, owned by `owner`) as the session service would: who may decide its requests is read from it. */
  registerWorker(workerId: string, owner: string, extra?: Partial<WorkerRecord>): Promise<void>;
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
    async registerWorker(workerId, owner, extra = {}) {
      const record: WorkerRecord = { worker_id: workerId, owner, status: 'running', updated_at: new Date().toISOString(), ...extra };
      await (await openWorkerRecords(nc, logger)).put(workerId, JSON.stringify(record));
    },
    async stop() {
      await nc.close();
      await server.stop();
    },
  };
}
