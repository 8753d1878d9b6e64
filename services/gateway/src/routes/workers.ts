import { WorkerParams, WorkerSchema, type Worker } from '@svc/protocol';
import { authorizeWorker } from '../auth/authorization.js';
import { errorResponses, routePlugin } from './route-plugin.js';

/** `GET /v1/workers/{id}`: a worker's status (what `svc attach` checks to go read-only). */
export const workerRoutes = routePlugin('svc-worker-routes', ['svc-worker-directory', 'svc-model-usage'], async (app) => {
  app.get(
    '/v1/workers/:id',
    {
      schema: {
        tags: ['workers'],
        summary: 'One worker: its status, session, owner and model use',
        description:
          '404 `worker_not_found` also when you may not see it. `model_usage` is what the model proxy measured (for workers whose template names a model API).',
        params: WorkerParams,
        response: { 200: WorkerSchema, ...errorResponses(401, 403, 404, 429) },
      },
    },
    async (request): Promise<Worker> => {
      const { token_hash: _hash, ...visible } = await authorizeWorker(request, app.workers, request.params.id);
      return visible.model ? { ...visible, model_usage: await app.modelUsage.get(visible.worker_id) } : visible;
    },
  );
});
