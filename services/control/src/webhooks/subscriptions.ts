import { randomBytes } from 'node:crypto';
import { serveRpc, type NatsConnection } from '@svc/bus';
import {
  CodedError,
  CreateWebhookRpc,
  createChecker,
  ListWebhooksRpc,
  subjects,
  WebhookRefRpc,
  type CreatedWebhook,
  type CreateWebhookRpcType,
  type ListResponseOf,
  type ListWebhooksRpcType,
  type Webhook,
  type WebhookAttempt,
  type WebhookRefRpcType,
} from '@svc/protocol';
import type { Logger, OutboundAddressCheck } from '@svc/service-kit';
import { portOf } from './destinations.js';
import { publicWebhook, type WebhookStore } from './webhook-store.js';

/** A subscription `owner` may see (undefined owner: an admin, who sees all); not found otherwise, so ids of others' say nothing. */
async function visible(webhooks: WebhookStore, ref: WebhookRefRpcType) {
  const webhook = await webhooks.get(ref.id);
  if (!webhook || (ref.owner !== undefined && webhook.owner !== ref.owner)) throw new CodedError('not_found', `no webhook ${ref.id}`);
  return webhook;
}

/**
 * Refuses a URL that points where webhooks may not (destinations.ts): a 400 that names the
 * address and what it is. Checked again at each delivery, since a name may move.
 */
async function checkDestination(destinations: OutboundAddressCheck, url: string): Promise<void> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new CodedError('invalid_request', 'the webhook URL does not parse');
  }
  const verdict = await destinations.check(parsed.hostname, portOf(parsed));
  if (verdict.allowed) return;
  // Only an address's class can be let through, by the operator; never a control-plane endpoint.
  const remedy = verdict.refusal === 'address' ? '; an operator may allow a range for in-cluster receivers (SVC_WEBHOOK_ALLOWED_CIDRS)' : '';
  // The host alone: a webhook URL's path often holds its own secret (Slack's do).
  throw new CodedError('invalid_request', `webhooks reach only the outside; ${parsed.host} is refused: ${verdict.reason}${remedy}`);
}

/** The RPCs behind `/v1/webhooks` (the gateway checks who may ask: an `all` scope is for admins). */
export function serveWebhookRpcs(deps: { nc: NatsConnection; webhooks: WebhookStore; destinations: OutboundAddressCheck; logger: Logger; queue: string }) {
  const options = { logger: deps.logger, queue: deps.queue };
  return [
    serveRpc<CreateWebhookRpcType, CreatedWebhook>(
      deps.nc,
      subjects.rpc.createWebhook,
      async ({ owner, owner_groups: ownerGroups, request }) => {
        await checkDestination(deps.destinations, request.url);
        // Standard Webhooks' secret: `whsec_` and 24 random bytes in base64.
        const secret = `whsec_${randomBytes(24).toString('base64')}`;
        const created = await deps.webhooks.create(`whk_${randomBytes(12).toString('hex')}`, { owner, groups: ownerGroups ?? [] }, request, secret);
        return { ...publicWebhook(created), secret };
      },
      { ...options, checker: createChecker(CreateWebhookRpc) },
    ),
    serveRpc<ListWebhooksRpcType, ListResponseOf<Webhook>>(
      deps.nc,
      subjects.rpc.listWebhooks,
      async ({ owner }) => {
        const items = (await deps.webhooks.list(owner)).map(publicWebhook);
        return { items, total: items.length };
      },
      { ...options, checker: createChecker(ListWebhooksRpc) },
    ),
    serveRpc<WebhookRefRpcType, { deleted: true }>(
      deps.nc,
      subjects.rpc.deleteWebhook,
      async (ref) => {
        await visible(deps.webhooks, ref);
        await deps.webhooks.delete(ref.id);
        return { deleted: true };
      },
      { ...options, checker: createChecker(WebhookRefRpc) },
    ),
    serveRpc<WebhookRefRpcType, ListResponseOf<WebhookAttempt>>(
      deps.nc,
      subjects.rpc.webhookAttempts,
      async (ref) => {
        await visible(deps.webhooks, ref);
        const items = await deps.webhooks.attempts(ref.id);
        return { items, total: items.length };
      },
      { ...options, checker: createChecker(WebhookRefRpc) },
    ),
  ];
}
