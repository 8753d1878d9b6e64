import { jetstream, jetstreamManager, type JsMsg } from '@nats-io/jetstream';
import { AuditHeadSchema, createChecker, streams, subjects, type AuditHead } from '@svc/protocol';
import type { NatsConnection } from './connection.js';
import { encode } from './codec.js';

const headChecker = createChecker<AuditHead>(AuditHeadSchema);

function headOf(message: JsMsg): AuditHead | undefined {
  try {
    const checked = headChecker.check(message.json());
    return checked.ok ? checked.value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Publishes the audit trail's head to `SVC_AUDIT_HEADS` (docs/audit.md) and resolves once
 * JetStream kept it. Every control replica publishes the heads it sees: the message id makes
 * one copy of each.
 */
export async function publishAuditHead(nc: NatsConnection, head: AuditHead): Promise<void> {
  await jetstream(nc).publish(subjects.auditHeads, encode(head), { msgID: `${head.seq}:${head.hash}` });
}

/**
 * What `SVC_AUDIT_HEADS` holds: every head published so far, oldest first, or `missing` when the
 * stream is not there at all. The two differ for `svc audit verify` (docs/audit.md): an empty
 * stream is a trail whose first head is still to come; a missing one was deleted (the services
 * make it at start, and none may delete it), so nothing outside the database is left to check
 * the trail against. A message that is not a head (someone else who may publish there) is
 * passed over: it proves nothing.
 */
export async function readPublishedAuditHeads(nc: NatsConnection): Promise<AuditHead[] | 'missing'> {
  const info = await (await jetstreamManager(nc)).streams.info(streams.auditHeads.name).catch((err: unknown) => {
    if (err instanceof Error && err.name === 'StreamNotFoundError') return undefined;
    throw err;
  });
  if (!info) return 'missing';
  if (info.state.messages === 0) return [];
  const heads: AuditHead[] = [];
  // An ordered consumer: no state kept on the server, read once from the first message to the last.
  const messages = await (await jetstream(nc).consumers.get(streams.auditHeads.name)).consume();
  try {
    for await (const message of messages) {
      const head = headOf(message);
      if (head) heads.push(head);
      if (message.seq >= info.state.last_seq) break;
    }
  } finally {
    await messages.close();
  }
  return heads;
}

/** Every head published so far, oldest first (none when the stream does not exist: `readPublishedAuditHeads` tells the two apart). */
export async function readAuditHeads(nc: NatsConnection): Promise<AuditHead[]> {
  const heads = await readPublishedAuditHeads(nc);
  return heads === 'missing' ? [] : heads;
}
