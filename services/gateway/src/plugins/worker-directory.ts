import fp from 'fastify-plugin';
import type { WorkerDirectory } from '@svc/auth';

declare module 'fastify' {
  interface FastifyInstance {
    /** Every worker's record, watched in the `svc_workers` KV bucket: who may call a worker's routes, and its status. */
    workers: WorkerDirectory;
  }
}

/** `app.workers`: the worker directory (its owner, `start`, stops it). */
export const workerDirectoryPlugin = fp<{ workers: WorkerDirectory }>(
  async (app, { workers }) => {
    app.decorate('workers', workers);
  },
  { name: 'svc-worker-directory', fastify: '5.x' },
);
