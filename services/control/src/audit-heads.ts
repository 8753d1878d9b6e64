import { publishAuditHead, type NatsConnection } from '@svc/bus';
import type { Logger } from '@svc/service-kit';
import type { AuditChainEnd, AuditLog } from './audit-log.js';

export interface HeadPublisherDeps {
  nc: NatsConnection;
  log: AuditLog;
  /** Names this replica in the heads it publishes. */
  instance: string;
  intervalMs: number;
  logger: Logger;
}

export interface HeadPublisher {
  /**
   * Publishes the head now, after the publish under way, even if this replica published it
   * before (the stream holds none: it was made again). A failure is logged, not thrown.
   */
  publishNow(): Promise<void>;
  /** Publishes the head a last time and stops. */
  stop(): Promise<void>;
}

/**
 * Publishes the audit trail's head to JetStream (`SVC_AUDIT_HEADS`, docs/audit.md) at start, at
 * each interval when it moved, and at stop: outside the database, where a database administrator
 * who deletes the newest records cannot take the head back. Between two heads the keys alone
 * protect the records: the newest interval's can be deleted unseen.
 */
export function startHeadPublisher(deps: HeadPublisherDeps): HeadPublisher {
  const logs = deps.logger.child({ component: 'audit-heads' });
  let published: AuditChainEnd | undefined;
  let keyedFrom: number | undefined;
  let running: Promise<void> = Promise.resolve();

  async function publish(again: boolean): Promise<void> {
    const end = await deps.log.end();
    if (!end || (!again && published && end.seq === published.seq && end.hash === published.hash)) return;
    if (published && (await deps.log.hashAt(published.seq)) !== published.hash) {
      // Seen here within one interval; `svc audit verify` names the record.
      logs.error(
        { seq: published.seq, hash: published.hash },
        'the audit trail no longer holds the head this replica published: records were changed or deleted in the database',
      );
    }
    if (end.key_id) keyedFrom ??= await deps.log.keyedFrom();
    await publishAuditHead(deps.nc, {
      seq: end.seq,
      hash: end.hash,
      ...(end.key_id ? { key_id: end.key_id } : {}),
      ...(keyedFrom === undefined ? {} : { keyed_from: keyedFrom }),
      published_at: new Date().toISOString(),
      instance: deps.instance,
    });
    published = end;
  }

  // One at a time: a slow store or NATS makes ticks wait, not pile up.
  const tick = (again = false) => {
    running = running
      .then(() => publish(again))
      .catch((err: unknown) => logs.warn({ err }, 'could not publish the audit trail head; trying again at the next interval'));
    return running;
  };
  void tick();
  const timer = setInterval(() => void tick(), deps.intervalMs);
  timer.unref();

  return {
    publishNow: () => tick(true),
    async stop() {
      clearInterval(timer);
      await tick();
    },
  };
}
