import { AckPolicy, DeliverPolicy, JetStreamApiCodes, JetStreamApiError, jetstream, jetstreamManager, type ConsumerMessages } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import { streams, subjects } from '@svc/protocol';
import type { NatsConnection } from './connection.js';

export type { JsMsg } from '@nats-io/jetstream';

/**
 * How long a message may stay unacknowledged before JetStream delivers it again: after a replica
 * dies, its unacknowledged messages wait this long. A consumer keeps messages in hand alive with
 * `working()` however long storing them takes, so this is about crashes, not slow commits.
 */
export const PARTITION_ACK_WAIT_MS = 10_000;
/** What a partition's consumer fetches ahead at most: a few gathered messages (each ≤ 512 KiB by default), or some thousands of single events. */
const PARTITION_PREFETCH_BYTES = 2 * 1024 * 1024;

/** The durable consumer of one partition: its name is stable so a restarted replica resumes it. */
export function partitionConsumerName(partition: number): string {
  return `event-ingest-p${partition}`;
}

function isConsumerNotFound(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === JetStreamApiCodes.ConsumerNotFound;
}

/**
 * The incoming messages of one partition (`SVC_EVENTS_INCOMING`), in stream order, for the one
 * event-ingest replica that owns it (docs/event-ingest.md). Each must be acknowledged once stored.
 */
export async function consumeIncomingPartition(nc: NatsConnection, partition: number): Promise<ConsumerMessages> {
  const jsm = await jetstreamManager(nc);
  const name = partitionConsumerName(partition);
  // A restarted replica must get its partition's unacknowledged messages first and in order. The
  // consumer a dead process left behind would hold those back until their ack deadline and hand
  // out newer ones meanwhile, which breaks per-worker order. On a work-queue stream the messages
  // still there are exactly those not yet stored, so a fresh consumer delivers them in stream
  // order. (Only one replica owns a partition at a time.)
  await jsm.consumers.delete(streams.incomingEvents.name, name).catch((err: unknown) => {
    if (!isConsumerNotFound(err)) throw err;
  });
  await jsm.consumers.add(streams.incomingEvents.name, {
    durable_name: name,
    filter_subject: subjects.incomingPartition(partition),
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: nanos(PARTITION_ACK_WAIT_MS),
    max_ack_pending: 20_000,
    // The consumer's state (delivered, acknowledged) lives in the server's memory only. On disk
    // nats-server rewrote each partition's state file many times a second under load, a file
    // created and renamed each time, at a cost in its CPU (docs/benchmarks.md#ingest), for
    // nothing we read: the consumer is made afresh at every replica start (above), a server that
    // restarts comes back without it and the replica makes it again (`abort_on_missing_resource`),
    // and the work queue itself holds every message not yet stored. An acknowledged message that a
    // crashed server recovers anyway is delivered again and stored once (uid constraint).
    mem_storage: true,
  });
  const consumer = await jetstream(nc).consumers.get(streams.incomingEvents.name, name);
  // Bounded in bytes too: a gathered message holds up to a thousand events, and what is fetched
  // but not yet stored must be stored well within the ack wait (or it is delivered again).
  // A consumer or stream gone (a cluster's server lost with it) ends the messages with an error
  // rather than waiting for it to come back: the caller makes the consumer again, at once.
  return consumer.consume({ max_bytes: PARTITION_PREFETCH_BYTES, abort_on_missing_resource: true });
}

/** How many of a partition's messages wait to be stored: not yet delivered, or delivered and not yet acknowledged (its ingest lag). */
export async function partitionBacklog(nc: NatsConnection, partition: number): Promise<number> {
  const info = await (await jetstreamManager(nc)).consumers.info(streams.incomingEvents.name, partitionConsumerName(partition));
  return info.num_pending + info.num_ack_pending;
}
