import type { FastifyRequest } from 'fastify';
import { requestJson } from '@svc/bus';
import {
  CodedError,
  CreatedWebhookSchema,
  CreateWebhookRequest,
  ListWebhookAttemptsResponse,
  ListWebhooksResponse,
  subjects,
  WebhookParams,
  type CreatedWebhook,
  type CreateWebhookRpcType,
  type ListResponseOf,
  type ListWebhooksRpcType,
  type Webhook,
  type WebhookAttempt,
  type WebhookRefRpcType,
} from '@svc/protocol';
import Type from 'typebox';
import { errorResponses, routePlugin } from './route-plugin.js';

const errors = errorResponses(400, 401, 403, 404, 429, 503, 504);

/** The signed-in person (a worker token may not manage webhooks). */
function userOf(request: FastifyRequest) {
  if (request.principal?.kind !== 'user') throw new CodedError('forbidden', 'webhooks are managed by people, not workers');
  return request.principal;
}

/** Whose subscriptions the caller sees: their own, or (admins) all of them. */
function ownerFilter(request: FastifyRequest): string | undefined {
  const user = userOf(request);
  return user.admin ? undefined : user.sub;
}

/** `/v1/webhooks`: subscriptions to notifications, owner-scoped (docs/webhooks.md). */
export const webhookRoutes = routePlugin('svc-webhook-routes', ['svc-bus'], async (app) => {
  const ask = <T>(subject: string, payload: unknown, request: FastifyRequest) => requestJson<T>(app.bus, subject, payload, { requestId: request.id });

  app.post(
    '/v1/webhooks',
    {
      schema: {
        tags: ['webhooks'],
        summary: 'Subscribe a URL to notifications (its signing secret is shown in this answer only)',
        description:
          'Deliveries are signed per Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature`) with the returned `secret`, retried with back-off until answered 2xx or the retry window ends (then the subscription is disabled, with the reason). `scope: all` (every worker) is for admins.',
        body: CreateWebhookRequest,
        response: { 201: CreatedWebhookSchema, ...errors },
      },
    },
    async (request, reply) => {
      const user = userOf(request);
      if (request.body.scope === 'all' && !user.admin) throw new CodedError('forbidden', 'only an admin may subscribe to every worker (scope "all")');
      const rpc: CreateWebhookRpcType = { owner: user.sub, owner_groups: [...user.groups], request: request.body };
      return reply.code(201).send(await ask<CreatedWebhook>(subjects.rpc.createWebhook, rpc, request));
    },
  );

  app.get(
    '/v1/webhooks',
    {
      schema: {
        tags: ['webhooks'],
        summary: "The caller's webhook subscriptions (an admin's: everyone's), with why any was disabled",
        response: { 200: ListWebhooksResponse, ...errors },
      },
    },
    async (request) => {
      const owner = ownerFilter(request);
      const rpc: ListWebhooksRpcType = owner === undefined ? {} : { owner };
      return ask<ListResponseOf<Webhook>>(subjects.rpc.listWebhooks, rpc, request);
    },
  );

  const refOf = (request: FastifyRequest, id: string): WebhookRefRpcType => {
    const owner = ownerFilter(request);
    return owner === undefined ? { id } : { id, owner };
  };

  app.delete(
    '/v1/webhooks/:id',
    {
      schema: {
        tags: ['webhooks'],
        summary: 'Delete a subscription (and its attempts); nothing more is delivered to it',
        params: WebhookParams,
        response: { 204: Type.Null(), ...errors },
      },
    },
    async (request, reply) => {
      await ask(subjects.rpc.deleteWebhook, refOf(request, request.params.id), request);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/v1/webhooks/:id/attempts',
    {
      schema: {
        tags: ['webhooks'],
        summary: "Every try to deliver to a subscription (the newest 1,000): when, the receiver's status or error",
        params: WebhookParams,
        response: { 200: ListWebhookAttemptsResponse, ...errors },
      },
    },
    async (request) => ask<ListResponseOf<WebhookAttempt>>(subjects.rpc.webhookAttempts, refOf(request, request.params.id), request),
  );
});
