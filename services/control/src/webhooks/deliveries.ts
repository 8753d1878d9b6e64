import http from 'node:http';
import https from 'node:https';
import { consumeLasting, consumeWebhookQueue, decodeJson, type JsMsg, type NatsConnection } from '@svc/bus';
import type { WebhookDelivery, WebhookFact, WebhookPayload } from '@svc/protocol';
import { counter, pinnedLookup, type CheckedAddress, type Logger, type OutboundAddressCheck } from '@svc/service-kit';
import { Webhook as Signer } from 'standardwebhooks';
import { portOf } from './destinations.js';
import type { WebhookStore, WebhookWithSecret } from './webhook-store.js';

/** How long one try may take before it counts as failed. */
const DELIVERY_TIMEOUT_MS = 10_000;

/** How deliveries are retried (docs/webhooks.md; settings `SVC_WEBHOOK_RETRY_*`). */
export interface RetryPolicy {
  /** The pause after the first failed try; it doubles after each. */
  firstMs: number;
  /** The longest pause. */
  maxMs: number;
  /** How long after the fact a failing delivery is given up, and its subscription disabled. */
  windowMs: number;
}

const deliveryAttempts = counter({
  name: 'svc_webhook_attempts_total',
  help: 'Tries to deliver a webhook notification, by kind and outcome (delivered, failed, gave_up).',
  labelNames: ['kind', 'outcome'],
});

/** The pause before try `attempt + 1` after try `attempt` failed. */
export function retryDelayMs(policy: RetryPolicy, attempt: number): number {
  return Math.min(policy.maxMs, policy.firstMs * 2 ** Math.max(0, attempt - 1));
}

/** The body a subscription gets: Standard Webhooks' JSON, or a Slack incoming webhook's message. */
export function bodyOf(webhook: Pick<WebhookWithSecret, 'format'>, fact: WebhookFact): string {
  const payload: WebhookPayload = { type: fact.kind, timestamp: fact.at, data: fact.data };
  if (webhook.format === 'standard') return JSON.stringify(payload);
  return JSON.stringify(slackMessage(fact));
}

/** How much of a request's input a Slack message shows (a section holds at most 3,000 characters). */
const SLACK_INPUT_KEPT = 2800;

/** Slack's own escapes for `&`, `<` and `>`; a backtick is fenced by zero-width spaces, so no two touch. */
const MRKDWN_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '`': '\u200b`\u200b' };

/**
 * Text the agent controls (tool names, request ids, the input), shown in mrkdwn as it was sent:
 * it cannot forge a link (`<https://…|Approve>`) or a mention (`<!channel>`), open or close a code
 * block (```), nor start a line of its own. Cut at `max` characters as shown, marked with `…`.
 */
function mrkdwnText(text: string, max = Infinity): string {
  let shown = '';
  for (const char of text) {
    const piece = MRKDWN_ESCAPES[char] ?? (/[\r\n\u2028\u2029]/.test(char) ? ' ' : char);
    if (shown.length + piece.length > max) return `${shown}…`;
    shown += piece;
  }
  return shown;
}

/** Slack's incoming-webhook format: `text` (the notification's fallback) and `blocks`. */
function slackMessage(fact: WebhookFact): { text: string; blocks: unknown[] } {
  const { data } = fact;
  const worker = `worker \`${mrkdwnText(data.worker_id)}\``;
  const tool = data.tool_name !== undefined ? mrkdwnText(data.tool_name) : 'a tool';
  const request = mrkdwnText(data.request_id ?? '');
  const deadline = data.deadline !== undefined ? mrkdwnText(data.deadline) : undefined;
  const text = {
    'request.needs_decision': `svc: ${worker} asks to use ${tool}${deadline ? ` (decided by policy at ${deadline})` : ''}`,
    'request.decided': `svc: ${worker}: request ${request} ${data.decision === 'allow' ? 'allowed' : 'denied'} by ${mrkdwnText(data.decided_by ?? 'someone')}`,
    'request.deadline_near': `svc: ${worker}: request ${request} (${tool}) is decided by policy at ${deadline ?? 'its deadline'}`,
    'request.escalated': `svc: ${worker}: nobody decided ${tool} in time; it is now offered to ${mrkdwnText((data.deciders ?? []).join(', '))} too${deadline ? ` (decided by policy at ${deadline})` : ''}`,
    'worker.ended': `svc: ${worker} ${data.exit_code === 0 ? 'ended' : `failed (exit code ${data.exit_code ?? '?'})`}`,
    'worker.idle': `svc: ${worker} finished its turn and is waiting for you`,
  }[fact.kind];
  const blocks: unknown[] = [{ type: 'section', text: { type: 'mrkdwn', text } }];
  if (data.worker_url)
    blocks.push({ type: 'actions', elements: [{ type: 'button', text: { type: 'plain_text', text: 'Open in the console' }, url: data.worker_url }] });
  if (data.input !== undefined)
    blocks.push({ type: 'section', text: { type: 'mrkdwn', text: `\`\`\`${mrkdwnText(JSON.stringify(data.input), SLACK_INPUT_KEPT)}\`\`\`` } });
  if (data.links)
    blocks.push({
      type: 'actions',
      elements: [
        { type: 'button', text: { type: 'plain_text', text: 'Allow…' }, url: data.links.allow, style: 'primary' },
        { type: 'button', text: { type: 'plain_text', text: 'Deny…' }, url: data.links.deny, style: 'danger' },
        { type: 'button', text: { type: 'plain_text', text: 'Open in the console' }, url: data.links.console },
      ],
    });
  return { text, blocks };
}

/**
 * POSTs `body` to the checked addresses only (the name stays in the Host header and TLS's server
 * name) and answers the receiver's status. Its body is never read: an attempt records the
 * status, so a webhook cannot be used to read what answers at an address.
 */
function postTo(url: URL, addresses: CheckedAddress[], headers: Record<string, string>, body: string, signal: AbortSignal): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = (url.protocol === 'https:' ? https : http).request(
      url,
      // No shared agent: a kept-alive connection would outlive the check it was made for.
      { method: 'POST', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) }, agent: false, lookup: pinnedLookup(addresses), signal },
      (response) => {
        resolve(response.statusCode ?? 0);
        response.on('error', () => undefined);
        response.destroy();
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

/**
 * One try: the URL's host resolved and checked again (it may resolve elsewhere than at creation),
 * then the signed POST to the checked addresses; the receiver's status, or why none came.
 */
async function post(
  webhook: WebhookWithSecret,
  delivery: WebhookDelivery,
  destinations: OutboundAddressCheck,
): Promise<{ status: number | null; error: string | null }> {
  const url = new URL(webhook.url);
  const verdict = await destinations.check(url.hostname, portOf(url));
  if (!verdict.allowed) return { status: null, error: `not sent: ${verdict.reason}` };
  const body = bodyOf(webhook, delivery.fact);
  const sentAt = new Date();
  const signature = new Signer(webhook.secret).sign(delivery.message_id, sentAt, body);
  const signal = AbortSignal.timeout(DELIVERY_TIMEOUT_MS);
  try {
    const status = await postTo(
      url,
      verdict.addresses,
      {
        'content-type': 'application/json',
        'user-agent': 'svc-webhooks',
        'webhook-id': delivery.message_id,
        'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
        'webhook-signature': signature,
      },
      body,
      signal,
    );
    return { status, error: null };
  } catch (err) {
    return { status: null, error: signal.aborted ? `no answer in ${DELIVERY_TIMEOUT_MS} ms` : (err as Error).message };
  }
}

/**
 * Delivers each notification to its subscription: a signed POST (Standard Webhooks), retried
 * with back-off (`nak` with a delay: the message stays in JetStream meanwhile, so a restart loses
 * nothing) until it is answered 2xx or the retry window is over; then the subscription is
 * disabled with the reason. Every try is recorded: the receiver's status, or why none came (a
 * URL that now resolves where webhooks may not point is not sent to, and the try says why).
 */
export async function deliverNotifications(deps: {
  nc: NatsConnection;
  webhooks: WebhookStore;
  /** Where a webhook may point (destinations.ts), checked again at each try. */
  destinations: OutboundAddressCheck;
  retry: RetryPolicy;
  logger: Logger;
}): Promise<{ stop(): Promise<void> }> {
  const log = deps.logger.child({ component: 'webhook-deliveries' });
  const inFlight = new Set<Promise<void>>();

  async function deliver(msg: JsMsg): Promise<void> {
    let delivery: WebhookDelivery;
    try {
      delivery = decodeJson<WebhookDelivery>(msg);
    } catch {
      msg.term('not JSON');
      return;
    }
    const webhook = await deps.webhooks.get(delivery.webhook_id);
    // Deleted or disabled meanwhile: nothing more to deliver.
    if (!webhook || webhook.disabled_at !== null) return msg.term('the subscription is gone or disabled');
    const attempt = msg.info.deliveryCount;
    // Recorded before it is made: a try cut short by a crash is still listed (as interrupted).
    const recorded = await deps.webhooks.startAttempt({
      webhook_id: webhook.id,
      message_id: delivery.message_id,
      kind: delivery.fact.kind,
      attempt,
      at: new Date().toISOString(),
    });
    const { status, error } = await post(webhook, delivery, deps.destinations);
    const delivered = status !== null && status >= 200 && status < 300;
    await deps.webhooks.finishAttempt(recorded, { status, error, delivered });
    if (delivered) {
      deliveryAttempts.inc({ kind: delivery.fact.kind, outcome: 'delivered' });
      return msg.ack();
    }
    const next = retryDelayMs(deps.retry, attempt);
    if (Date.now() + next - Date.parse(delivery.fact.at) > deps.retry.windowMs) {
      deliveryAttempts.inc({ kind: delivery.fact.kind, outcome: 'gave_up' });
      const reason = `every try failed for ${Math.round(deps.retry.windowMs / 1000)} s (${attempt} tries); the last: ${status === null ? error : `HTTP ${status}`}`;
      await deps.webhooks.disable(webhook.id, reason);
      log.warn({ webhook_id: webhook.id, owner: webhook.owner }, `webhook disabled: ${reason}`);
      return msg.term('retry window over');
    }
    deliveryAttempts.inc({ kind: delivery.fact.kind, outcome: 'failed' });
    msg.nak(next);
  }

  const consumption = await consumeLasting(
    () => consumeWebhookQueue(deps.nc, 'deliveries'),
    (msg) => {
      // Many at once (up to the consumer's max_ack_pending): one slow receiver holds up no other.
      const task = deliver(msg).catch((err: unknown) => {
        // The store away: try again soon (a try already made stays listed as interrupted).
        log.warn({ err }, 'a webhook delivery could not be handled; it comes back');
        msg.nak(1000);
      });
      inFlight.add(task);
      void task.finally(() => inFlight.delete(task));
    },
    { logger: log, what: 'webhook deliveries' },
  );
  return {
    async stop() {
      await consumption.stop();
      await Promise.allSettled([...inFlight]);
    },
  };
}
