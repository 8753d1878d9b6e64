import { createHash } from 'node:crypto';
import type { WorkerDirectory } from '@svc/auth';
import { consumeLasting, consumeWebhookQueue, decodeJson, type DurablePublisher, type JsMsg, type NatsConnection } from '@svc/bus';
import {
  decidedByOf,
  routeOf,
  subjects,
  type ApprovalRoute,
  type StoredEvent,
  type WorkerRecord,
  type WebhookData,
  type WebhookDelivery,
  type WebhookFact,
  type WebhookKind,
} from '@svc/protocol';
import type { Logger } from '@svc/service-kit';
import type { StoredRequest } from '@svc/store';
import type { WebhookStore } from './webhook-store.js';

/** Signed links for a request that waits (links.ts); undefined when links are not configured. */
export type LinksFor = (workerId: string, requestId: string, subscriber: string, deadline: string | undefined) => Promise<WebhookData['links']> | undefined;

export interface Notifier {
  /** A request now waits for a person (those its approval route names, when it has one). */
  needsDecision(request: StoredEvent<'control_request'>, deadline: Date | undefined): Promise<void>;
  /** A routed request now offered to its route's `escalate_to` too (docs/teams.md). */
  escalated(request: StoredEvent<'control_request'>, route: ApprovalRoute, deadline: Date): Promise<void>;
  decided(decision: StoredEvent<'control_response'>): Promise<void>;
  deadlineNear(request: StoredRequest, deadline: Date): Promise<void>;
  /** A worker's agent ended (`exit_code` 0) or failed. */
  ended(exit: StoredEvent, exitCode: number): Promise<void>;
  /** A conversation's agent ended its turn: it waits for a message (its `activity` event). */
  idle(activity: StoredEvent): Promise<void>;
}

/**
 * Turns what the control service sees into facts on the durable queue (JetStream
 * `SVC_WEBHOOKS`). Every replica sees every request and decision, so each publishes the same
 * fact: its id is the message id, and JetStream keeps one.
 */
export function createNotifier(deps: { publisher: DurablePublisher; workers: WorkerDirectory; logger: Logger; publicUrl?: string | undefined }): Notifier {
  const consoleBase = deps.publicUrl?.replace(/\/+$/, '');
  async function publish(
    kind: WebhookKind,
    event: { worker_id: string },
    key: string,
    data: Omit<WebhookData, 'worker_id' | 'owner'> | ((worker: WorkerRecord) => Omit<WebhookData, 'worker_id' | 'owner'>),
  ): Promise<void> {
    const worker = await deps.workers.get(event.worker_id);
    if (worker === undefined) return deps.logger.warn({ worker_id: event.worker_id, kind }, 'no notification: the worker is unknown');
    const { owner } = worker;
    if (typeof data === 'function') data = data(worker);
    const fact: WebhookFact = {
      id: `${kind}:${event.worker_id}:${key}`,
      kind,
      at: new Date().toISOString(),
      data: { worker_id: event.worker_id, owner, ...data },
    };
    await deps.publisher.publish(subjects.webhookFacts, fact, { messageId: fact.id });
  }
  return {
    needsDecision: (request, deadline) =>
      publish('request.needs_decision', request, request.data.request_id, (worker) => {
        const route = routeOf(worker.approvals, request.data)?.route;
        return {
          request_id: request.data.request_id,
          tool_name: request.data.tool_name,
          input: request.data.input,
          ...(deadline ? { deadline: deadline.toISOString() } : {}),
          ...(route ? { deciders: route.to, rule: route.match } : {}),
        };
      }),
    escalated: (request, route, deadline) =>
      publish('request.escalated', request, request.data.request_id, {
        request_id: request.data.request_id,
        tool_name: request.data.tool_name,
        input: request.data.input,
        deadline: deadline.toISOString(),
        deciders: route.escalate_to ?? [],
        rule: route.match,
      }),
    decided: (decision) =>
      publish('request.decided', decision, decision.data.request_id, {
        request_id: decision.data.request_id,
        decision: decision.data.decision,
        decided_by: decidedByOf(decision),
        source: decision.source,
        ...(decision.data.message ? { message: decision.data.message } : {}),
      }),
    deadlineNear: (request, deadline) =>
      publish('request.deadline_near', request.event, request.event.data.request_id, {
        request_id: request.event.data.request_id,
        tool_name: request.event.data.tool_name,
        deadline: deadline.toISOString(),
      }),
    ended: (exit, exitCode) => publish('worker.ended', exit, exit.id, { exit_code: exitCode }),
    idle: (activity) => publish('worker.idle', activity, activity.id, consoleBase ? { worker_url: `${consoleBase}/workers/${activity.worker_id}` } : {}),
  };
}

/** The `webhook-id` of a fact's deliveries to one subscription: the same on every try. */
export function messageIdOf(factId: string, webhookId: string): string {
  return `msg_${createHash('sha256').update(`${factId}\u0000${webhookId}`).digest('base64url').slice(0, 32)}`;
}

/**
 * Fans each fact out: one delivery message per subscription told of it, then the fact is
 * acknowledged. A replica that dies part-way leaves the fact unacknowledged; it is fanned out
 * again, and the deliveries' message ids keep each once.
 */
export async function fanOutFacts(deps: {
  nc: NatsConnection;
  publisher: DurablePublisher;
  webhooks: WebhookStore;
  linksFor: LinksFor;
  logger: Logger;
}): Promise<{ stop(): Promise<void> }> {
  const log = deps.logger.child({ component: 'webhook-fan-out' });
  const fanOut = async (msg: JsMsg) => {
    let fact: WebhookFact;
    try {
      fact = decodeJson<WebhookFact>(msg);
    } catch {
      msg.term('not JSON');
      return;
    }
    try {
      for (const webhook of await deps.webhooks.subscribersOf(fact.kind, fact.data.owner, fact.data.deciders)) {
        const data = { ...fact.data };
        // The links decide as the subscription's owner: who is told may decide.
        if ((fact.kind === 'request.needs_decision' || fact.kind === 'request.escalated') && data.request_id) {
          const links = await deps.linksFor(data.worker_id, data.request_id, webhook.owner, data.deadline);
          if (links) data.links = links;
        }
        const delivery: WebhookDelivery = { webhook_id: webhook.id, message_id: messageIdOf(fact.id, webhook.id), fact: { ...fact, data } };
        await deps.publisher.publish(subjects.webhookDelivery(webhook.id), delivery, { messageId: delivery.message_id });
      }
      msg.ack();
    } catch (err) {
      log.warn({ err, fact: fact.id }, 'could not fan a notification out; it comes back');
      msg.nak(1000);
    }
  };
  const consumption = await consumeLasting(() => consumeWebhookQueue(deps.nc, 'facts'), fanOut, { logger: log, what: 'webhook facts' });
  return { stop: () => consumption.stop() };
}
