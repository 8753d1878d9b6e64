import type { APIErrorBody } from './errors.js';
import type { ServiceName } from './status-api.js';

/**
 * Incoming events are partitioned by worker so one consumer sees all of a worker's events in
 * order. The count is fixed for the life of a deployment: changing it re-homes workers
 * (docs/scale-out.md says how). An event-ingest replica owns the partitions p with
 * `p % replicaCount === replicaIndex`.
 */
export const EVENT_PARTITIONS = 16;

/** NATS subjects, all under `svc.`; services never spell a subject by hand. */
export const subjects = {
  /** Where the gateway publishes an incoming event (JetStream `SVC_EVENTS_INCOMING`). */
  incomingEvent: (partition: number, workerId: string) => `svc.events.incoming.${partition}.${workerId}`,
  /** Where the gateway publishes the gathered events of one partition's workers (`IncomingEventBatchMessage`); `batch` is never a worker id (`wrk_…`). */
  incomingBatch: (partition: number) => `svc.events.incoming.${partition}.batch`,
  /** All incoming events of one partition (an event-ingest consumer's filter). */
  incomingPartition: (partition: number) => `svc.events.incoming.${partition}.*`,
  incomingAll: 'svc.events.incoming.>',
  /** Where stored events are announced after commit, a `StoredEventBatch` per commit (JetStream `SVC_EVENTS_STORED`). */
  storedEvent: (workerId: string) => `svc.events.stored.${workerId}`,
  storedAll: 'svc.events.stored.>',
  /**
   * The stored events of a worker's life — its agent's exits (`agent_exit`) and activity
   * (`activity`) — announced a second time, after commit, as a `StoredEventBatch` (JetStream
   * `SVC_EVENTS_LIFECYCLE`): the session service needs only these, and a durable consumer of
   * every stored event is woken for every event.
   */
  lifecycleEvent: (workerId: string) => `svc.events.lifecycle.${workerId}`,
  lifecycleAll: 'svc.events.lifecycle.>',
  /**
   * Core NATS, not kept: event-ingest repeats here the stored events the control service acts
   * on (`control_request`, and the `system` event of a withdrawal), as a `StoredEventBatch`, so
   * control replicas need not read every event of every worker. A replica that missed some
   * (it was down) finds them in the store when it starts.
   */
  controlEvents: (workerId: string) => `svc.control.events.${workerId}`,
  controlEventsAll: 'svc.control.events.*',
  /**
   * Request/reply, core NATS: a decision for the event-ingest replica owning the worker's
   * partition to append and announce (`DecisionAppendRequest`): every event of a worker has that
   * one writer (docs/architecture.md). Only the control service may publish here.
   */
  decisionAppend: (partition: number) => `svc.events.decide.${partition}`,
  decisionAppendAll: 'svc.events.decide.*',
  /** JetStream `SVC_WEBHOOKS`: what to notify of (`WebhookFact`), then one `WebhookDelivery` per subscription. */
  webhookFacts: 'svc.webhooks.facts',
  webhookDelivery: (webhookId: string) => `svc.webhooks.deliveries.${webhookId}`,
  webhookDeliveriesAll: 'svc.webhooks.deliveries.*',
  webhooksAll: 'svc.webhooks.>',
  /** JetStream `SVC_AUDIT_HEADS`: the audit trail's head (`AuditHead`), as the control service publishes it. */
  auditHeads: 'svc.audit.heads',
  /** Core NATS: a worker's sidecar polled for decisions (it is alive); the session service records it. */
  workerAlive: (workerId: string) => `svc.workers.alive.${workerId}`,
  workerAliveAll: 'svc.workers.alive.*',
  /** Core NATS: a worker's status changed (a `WorkerRecord` without its token hash); the KV bucket `svc_workers` holds the latest. */
  workerStatus: (workerId: string) => `svc.workers.status.${workerId}`,
  workerStatusAll: 'svc.workers.status.*',
  /** Core NATS: a log follower is still there (see `FollowLogsRpc`), or is gone. */
  logFollowKeepalive: (followId: string) => `svc.session.logs.keepalive.${followId}`,
  logFollowStop: (followId: string) => `svc.session.logs.stop.${followId}`,
  /** A terminal's bytes from the person to the sandbox, relayed between the gateways holding its two ends. */
  terminalToSandbox: (workerId: string, terminalId: string) => `svc.terminal.${workerId}.${terminalId}.to-sandbox`,
  terminalToPerson: (workerId: string, terminalId: string) => `svc.terminal.${workerId}.${terminalId}.to-person`,
  /** One end of a terminal closed: the other closes too. */
  terminalClosed: (workerId: string, terminalId: string) => `svc.terminal.${workerId}.${terminalId}.closed`,
  /** The sandbox's end of a terminal connected. */
  terminalConnected: (workerId: string, terminalId: string) => `svc.terminal.${workerId}.${terminalId}.connected`,
  terminalsAll: 'svc.terminal.>',
  /** Request/reply: the health of one service (every replica answers; the first answer wins). */
  health: (service: ServiceName) => `svc.health.${service}`,
  /** Request/reply subjects of the services, named `svc.rpc.<service>.<operation>`. */
  rpc: {
    listEvents: 'svc.rpc.events.list',
    purgeEvents: 'svc.rpc.events.purge',
    decide: 'svc.rpc.control.decide',
    permissionRules: 'svc.rpc.control.rules',
    listRules: 'svc.rpc.control.rules.list',
    revokeRule: 'svc.rpc.control.rules.revoke',
    policySuggestions: 'svc.rpc.control.policy.suggestions',
    policyReplay: 'svc.rpc.control.policy.replay',
    controlRequests: 'svc.rpc.control.requests',
    approvals: 'svc.rpc.control.approvals',
    appendAudit: 'svc.rpc.control.audit.append',
    listAudit: 'svc.rpc.control.audit.list',
    verifyAudit: 'svc.rpc.control.audit.verify',
    createWebhook: 'svc.rpc.control.webhooks.create',
    listWebhooks: 'svc.rpc.control.webhooks.list',
    deleteWebhook: 'svc.rpc.control.webhooks.delete',
    webhookAttempts: 'svc.rpc.control.webhooks.attempts',
    createSession: 'svc.rpc.session.create',
    getSession: 'svc.rpc.session.get',
    listSessions: 'svc.rpc.session.list',
    listTemplates: 'svc.rpc.session.templates',
    deleteSession: 'svc.rpc.session.delete',
    setSessionAccess: 'svc.rpc.session.access',
    followLogs: 'svc.rpc.session.logs',
    workspacePush: 'svc.rpc.session.workspace.push',
    pullRequest: 'svc.rpc.session.workspace.pull_request',
    workspaceFile: 'svc.rpc.session.workspace.file',
    workspaceFullDiff: 'svc.rpc.session.workspace.full_diff',
    getWorker: 'svc.rpc.session.worker.get',
    createWorker: 'svc.rpc.session.worker.create',
    setWorkerStatus: 'svc.rpc.session.worker.status',
  },
} as const;

/** JetStream streams and KV buckets the design needs (declared idempotently by libs/bus). */
export const streams = {
  /** Durable hand-off from the gateway to event-ingest. Work queue: a message is gone once stored. */
  incomingEvents: {
    name: 'SVC_EVENTS_INCOMING',
    subjects: [subjects.incomingAll],
    /** Window in which a repeated `Nats-Msg-Id` is dropped by JetStream. */
    duplicateWindowMs: 2 * 60 * 1000,
  },
  /** Stored events for live viewers and internal subscribers, kept within limits. */
  storedEvents: {
    name: 'SVC_EVENTS_STORED',
    subjects: [subjects.storedAll],
    maxAgeMs: 24 * 60 * 60 * 1000,
    maxBytes: 1024 * 1024 * 1024,
  },
  /** Agent exits and activity, kept a week: a subscriber down for a while still learns of every one. */
  lifecycleEvents: {
    name: 'SVC_EVENTS_LIFECYCLE',
    subjects: [subjects.lifecycleAll],
    maxAgeMs: 7 * 24 * 60 * 60 * 1000,
    maxBytes: 64 * 1024 * 1024,
  },
  /** Notifications on their way to webhook receivers: kept until delivered or past the retry window. */
  webhooks: {
    name: 'SVC_WEBHOOKS',
    subjects: ['svc.webhooks.>'],
    /** Longer than the longest retry window (docs/webhooks.md). */
    maxAgeMs: 3 * 24 * 60 * 60 * 1000,
    duplicateWindowMs: 10 * 60 * 1000,
  },
  /**
   * The audit trail's heads, outside the database (docs/audit.md): kept for good, and nobody
   * may delete or purge a message (`deny_delete`, `deny_purge`, which JetStream never lets go).
   */
  auditHeads: {
    name: 'SVC_AUDIT_HEADS',
    subjects: [subjects.auditHeads],
    /** Every control replica publishes the same head: one copy is kept (`Nats-Msg-Id` is `<seq>:<hash>`). */
    duplicateWindowMs: 10 * 60 * 1000,
  },
} as const;

export const kvBuckets = {
  /** Worker id → worker record (status, token hash); the gateway checks tokens against it. */
  workers: 'svc_workers',
  /** Worker id → `ModelUsage`, as the model proxy measured it (compare-and-set by every gateway replica). */
  modelUsage: 'svc_model_usage',
  /** `<worker id>.report` → its workspace's last changes report; `.pushed`, `.pull_request` → what people did with them (docs/workspace.md). */
  workspaceChanges: 'svc_workspace_changes',
} as const;

/** JetStream object stores (each a stream named `OBJ_<bucket>`). */
export const objectBuckets = {
  /** `<worker id>/<sha256>` → an image a person sent with a message, kept `MESSAGE_IMAGES_KEPT_MS` (docs/conversations.md, "Images"). */
  messageImages: 'svc_message_images',
  /** `<worker id>/<sha256>` → a patch of a workspace's changes report, kept `WORKSPACE_PATCHES_KEPT_MS` (docs/workspace.md). */
  workspacePatches: 'svc_workspace_patches',
} as const;

/** NATS header names. */
export const headers = {
  /** The request id of the HTTP request that caused this message. */
  requestId: 'X-Request-Id',
  /** JetStream's de-duplication header; we set `<worker>:<uid>`. */
  messageId: 'Nats-Msg-Id',
} as const;

/** The JetStream message id of an incoming event: duplicates within the window are dropped. */
export function incomingMessageId(workerId: string, uid: string): string {
  return `${workerId}:${uid}`;
}

/** The partition of a worker: FNV-1a of its id, modulo the partition count. Stable across versions. */
export function partitionOfWorker(workerId: string, partitions: number = EVENT_PARTITIONS): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < workerId.length; i++) {
    hash ^= workerId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % partitions;
}

/** The partitions an event-ingest replica owns. */
export function partitionsOfReplica(replicaIndex: number, replicaCount: number, partitions: number = EVENT_PARTITIONS): number[] {
  if (!Number.isInteger(replicaCount) || replicaCount < 1) throw new RangeError(`replica count must be a positive integer, got ${replicaCount}`);
  if (!Number.isInteger(replicaIndex) || replicaIndex < 0 || replicaIndex >= replicaCount) {
    throw new RangeError(`replica index must be in 0..${replicaCount - 1}, got ${replicaIndex}`);
  }
  return Array.from({ length: partitions }, (_, p) => p).filter((p) => p % replicaCount === replicaIndex);
}

/** Every request/reply answer on the bus: a result, or a coded error that the gateway maps to HTTP. */
export type RpcReply<T = unknown> = { ok: true; result: T } | { ok: false; error: APIErrorBody };
