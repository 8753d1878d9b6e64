import fp from 'fastify-plugin';
import { createModelUsageLedger, type ModelUsageLedger } from '@svc/bus';
import type { Logger } from '@svc/service-kit';

declare module 'fastify' {
  interface FastifyInstance {
    /** Every worker's model use as the model proxy measured it, shared by every gateway replica. */
    modelUsage: ModelUsageLedger;
  }
}

/** `app.modelUsage`: the ledger the model proxy writes and a worker's view reads. Waits for its KV bucket. */
export const modelUsagePlugin = fp<{ logger: Logger }>(
  async (app, { logger }) => {
    app.decorate('modelUsage', await createModelUsageLedger(app.bus, logger));
  },
  { name: 'svc-model-usage', fastify: '5.x', dependencies: ['svc-bus'] },
);
