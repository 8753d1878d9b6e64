import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { kvBuckets, objectBuckets, SERVICE_NAMES, streams, subjects } from '@svc/protocol';

/**
 * NATS is internal and authenticated (docs/nats-security.md): every service connects as its own
 * user, which may publish and subscribe only the subjects it needs; a connection without
 * credentials is refused. `operator` can do everything: the local stack's own connection and
 * the tests' (it creates streams and reads anything); no service runs as it.
 */
export const NATS_SERVICE_USERS = ['gateway', 'event-ingest', 'control', 'session'] as const;
export type NatsServiceUser = (typeof NATS_SERVICE_USERS)[number];
const NATS_OPERATOR_USER = 'operator';
type NatsUser = NatsServiceUser | typeof NATS_OPERATOR_USER;
const ALL_USERS: readonly NatsUser[] = [...NATS_SERVICE_USERS, NATS_OPERATOR_USER];

interface NatsCredential {
  user: NatsUser;
  password: string;
}
export type NatsCredentials = Readonly<Record<NatsUser, NatsCredential>>;

interface SubjectRules {
  allow: string[];
  deny?: string[];
}
/** How a service answers a request: once, to the reply subject of a request it received, within `expires`. */
interface ResponseRules {
  max: number;
  /** A Go duration, e.g. `15m`. */
  expires: string;
}
export interface NatsPermissions {
  publish: SubjectRules;
  subscribe: SubjectRules;
  allow_responses: ResponseRules;
}

/** `svc.events.incoming.>` and the like, from the protocol's subject builders (one place spells them). */
const wildcard = (subject: string) => subject.replace(/\.\*$/, '.>');
const KV = (bucket: string) => `$KV.${bucket}.>`;
const { rpc } = subjects;

/** The request/reply subjects of one service: those it may call, those it serves. */
export interface NatsRequests {
  calls: readonly string[];
  serves: readonly string[];
}

/**
 * Who may ask what (docs/nats-security.md, "Who may call what", which a test holds to this): a
 * service may publish a request only on a subject it calls, and subscribe only to those it
 * serves. So a service's password, leaked, asks nothing that service does not ask: the session
 * service's cannot decide (`svc.rpc.control.decide` is the gateway's alone to call), and who
 * decides is checked in control anyway (a user assertion, not the payload).
 */
/** The control service's RPCs that people reach through the gateway. */
const PEOPLE_CONTROL_RPCS = [
  rpc.decide,
  rpc.controlRequests,
  rpc.approvals,
  rpc.permissionRules,
  rpc.listRules,
  rpc.revokeRule,
  rpc.policySuggestions,
  rpc.policyReplay,
  rpc.listAudit,
  rpc.verifyAudit,
  rpc.createWebhook,
  rpc.listWebhooks,
  rpc.deleteWebhook,
  rpc.webhookAttempts,
];
/** The session service's RPCs that people reach through the gateway. */
const PEOPLE_SESSION_RPCS = [
  rpc.createSession,
  rpc.getSession,
  rpc.listSessions,
  rpc.listTemplates,
  rpc.deleteSession,
  rpc.setSessionAccess,
  rpc.followLogs,
  rpc.workspacePush,
  rpc.pullRequest,
  rpc.workspaceFile,
  rpc.workspaceFullDiff,
];

export const NATS_REQUESTS: Readonly<Record<NatsServiceUser, NatsRequests>> = {
  gateway: {
    calls: [
      rpc.listEvents,
      ...PEOPLE_CONTROL_RPCS,
      ...PEOPLE_SESSION_RPCS,
      // A person's terminal into a sandbox is audited where the person is (docs/workspace.md).
      rpc.appendAudit,
      // `/v1/status` asks the others; it answers for itself.
      ...SERVICE_NAMES.filter((service) => service !== 'gateway').map((service) => subjects.health(service)),
    ],
    serves: [subjects.health('gateway')],
  },
  'event-ingest': {
    calls: [],
    serves: [rpc.listEvents, rpc.purgeEvents, subjects.decisionAppendAll, subjects.health('event-ingest')],
  },
  control: {
    // A decision, for the event-ingest replica owning the worker's partition to append.
    calls: [subjects.decisionAppendAll],
    // The audit facts other services report come in on appendAudit.
    serves: [...PEOPLE_CONTROL_RPCS, rpc.appendAudit, subjects.health('control')],
  },
  session: {
    // The audit facts of sessions; retention's purge of an ended worker's events.
    calls: [rpc.appendAudit, rpc.purgeEvents],
    // The worker records' RPCs are the operator's (tests, tools): no service calls them.
    serves: [...PEOPLE_SESSION_RPCS, rpc.getWorker, rpc.createWorker, rpc.setWorkerStatus, subjects.health('session')],
  },
};

/**
 * Replies go to the asker's inbox (`_INBOX.…`, which every service subscribes to: nats.js's and
 * JetStream's replies come there). No service may publish there at will: it answers under
 * `allow_responses`, once per request it received. The permission lasts longer than any asker
 * waits: the session service's purge request, 10 minutes.
 */
const ANSWERS: ResponseRules = { max: 1, expires: '15m' };
/**
 * The gateway answers only health, whose asker waits a second. It also hears the stored
 * events' announcements, whose reply subjects (event-ingest's JetStream acks) it never answers,
 * and the server keeps each as a permission until it expires: kept short.
 */
const GATEWAY_ANSWERS: ResponseRules = { max: 1, expires: '10s' };
const INBOXES = '_INBOX.>';
/** Where the session service sends the log lines a gateway follows (`deliver_to`: services/gateway/src/routes/sessions.ts). */
const LOG_DELIVERIES = '_INBOX.logs.>';

/** The stream that holds a KV bucket. */
const kvStream = (bucket: string) => `KV_${bucket}`;
/** The stream that holds an object store, and the subjects of its objects' chunks and metadata. */
const objectStream = (bucket: string) => `OBJ_${bucket}`;
const OBJECTS = (bucket: string) => `$O.${bucket}.>`;
/**
 * Flow control of a push consumer: an object store's reader answers it (the server waits for
 * the answer before it sends more of a large object).
 */
const FLOW_CONTROL = '$JS.FC.>';
/** Every stream svc keeps: the protocol's streams, the KV buckets' and the object stores' (what `ensureStreams` declares). */
const SVC_STREAMS = [
  ...Object.values(streams).map((stream) => stream.name),
  ...Object.values(kvBuckets).map(kvStream),
  ...Object.values(objectBuckets).map(objectStream),
];

/**
 * JetStream's API as every service uses it: account info, streams' names and info, reading a
 * message (a KV get), and consumers (made, read, and deleted when an ordered one resets). Not
 * `$JS.API.>`: nothing here deletes, purges, updates, snapshots or restores a stream. Each
 * service adds, by name, the streams it may create and update (`JS_STREAMS`).
 */
const JS_API = [
  '$JS.API.INFO',
  '$JS.API.STREAM.NAMES',
  '$JS.API.STREAM.LIST',
  '$JS.API.STREAM.INFO.*',
  '$JS.API.STREAM.MSG.GET.*',
  '$JS.API.DIRECT.GET.>',
  '$JS.API.CONSUMER.>',
];

/**
 * Which streams each service may create and update (docs/nats-security.md, "Streams"). control
 * and event-ingest declare every stream at start (`ensureStreams`: a missing one created, an
 * existing one brought to the current settings), but none updates `SVC_AUDIT_HEADS`: an update
 * could set limits that drop the heads it keeps (`max_msgs`, `max_age`), so once made it is left
 * as it is, and only NATS's operator changes it (docs/audit.md). The gateway and the session
 * service make the KV buckets (and the gateway the object stores of message images and workspace patches) they open if missing, and update nothing.
 */
export const JS_STREAMS: Readonly<Record<NatsServiceUser, { create: readonly string[]; update: readonly string[] }>> = {
  gateway: {
    create: [
      kvStream(kvBuckets.workers),
      kvStream(kvBuckets.modelUsage),
      kvStream(kvBuckets.workspaceChanges),
      objectStream(objectBuckets.messageImages),
      objectStream(objectBuckets.workspacePatches),
    ],
    update: [],
  },
  'event-ingest': { create: SVC_STREAMS, update: SVC_STREAMS.filter((name) => name !== streams.auditHeads.name) },
  control: { create: SVC_STREAMS, update: SVC_STREAMS.filter((name) => name !== streams.auditHeads.name) },
  session: { create: [kvStream(kvBuckets.workers), objectStream(objectBuckets.workspacePatches)], update: [] },
};

/** A service's JetStream API: `JS_API` and the streams it may create and update. */
const jsApiOf = (user: NatsServiceUser) => [
  ...JS_API,
  ...JS_STREAMS[user].create.map((name) => `$JS.API.STREAM.CREATE.${name}`),
  ...JS_STREAMS[user].update.map((name) => `$JS.API.STREAM.UPDATE.${name}`),
];

/**
 * JetStream operations that destroy or rewrite what is kept, denied to every service (only the
 * operator may): deleting, purging or updating a stream, deleting a message. The allow lists
 * leave them out already; denied too, so no wider allow added later lets them through. A service
 * that updates svc's streams (`JS_STREAMS`) is denied the update of the audit heads' alone: a
 * deny would win over the allows it needs.
 */
const destructiveJsApiOf = (user: NatsServiceUser) => [
  '$JS.API.STREAM.DELETE.>',
  '$JS.API.STREAM.PURGE.>',
  '$JS.API.STREAM.MSG.DELETE.>',
  ...(JS_STREAMS[user].update.length === 0 ? ['$JS.API.STREAM.UPDATE.>'] : [`$JS.API.STREAM.UPDATE.${streams.auditHeads.name}`]),
];
/**
 * The gateway may not delete a consumer of svc's streams, which hold the services' durable
 * consumers; it may on the KV buckets': a watch of a bucket (an ordered consumer) that resets,
 * as it does when a server of a cluster is lost, deletes the consumer it leaves.
 */
const SERVICE_CONSUMER_DELETES = Object.values(streams).map((stream) => `$JS.API.CONSUMER.DELETE.${stream.name}.>`);
/** The subjects only event-ingest, the one announcer of stored events, may publish (decisions included: docs/architecture.md). */
const STORED_ANNOUNCEMENTS = [subjects.storedAll, subjects.lifecycleAll, wildcard(subjects.controlEventsAll)];

/**
 * Each service's subjects: its requests (`NATS_REQUESTS`), what it publishes and follows, and
 * JetStream's API (its consumers, KV reads and watches, stream info, the streams it creates and
 * updates). No service may delete, purge or rewrite a stream, the audit heads' least of all. The
 * gateway, the one service the outside reaches, is held tightest: it may publish incoming
 * events and its requests, never a stored event's announcement, a worker record or status, nor
 * delete a service's consumer. The deny lists repeat what the allow lists leave out where a
 * subject would be a forgery or a loss: a later, wider allow still cannot let it through.
 */
export const NATS_PERMISSIONS: Readonly<Record<NatsServiceUser, NatsPermissions>> = {
  gateway: {
    publish: {
      allow: [
        ...NATS_REQUESTS.gateway.calls,
        ...jsApiOf('gateway'),
        subjects.incomingAll,
        subjects.logFollowKeepalive('*'),
        subjects.logFollowStop('*'),
        // Terminals' bytes, relayed between the gateways holding their two ends.
        subjects.terminalsAll,
        wildcard(subjects.workerAliveAll),
        KV(kvBuckets.modelUsage),
        // People's message images: written by the gateway that takes the message, read by any.
        OBJECTS(objectBuckets.messageImages),
        // The workspaces' changes: reported through the gateway, kept for after the sandbox (docs/workspace.md).
        KV(kvBuckets.workspaceChanges),
        OBJECTS(objectBuckets.workspacePatches),
        FLOW_CONTROL,
      ],
      deny: [
        ...STORED_ANNOUNCEMENTS,
        subjects.decisionAppendAll,
        wildcard(subjects.workerStatusAll),
        KV(kvBuckets.workers),
        ...destructiveJsApiOf('gateway'),
        ...SERVICE_CONSUMER_DELETES,
      ],
    },
    // Control events too: a waiting long poll hears a decision the moment it is committed.
    subscribe: { allow: [INBOXES, subjects.storedAll, wildcard(subjects.controlEventsAll), subjects.terminalsAll, ...NATS_REQUESTS.gateway.serves] },
    allow_responses: GATEWAY_ANSWERS,
  },
  'event-ingest': {
    publish: {
      allow: [...NATS_REQUESTS['event-ingest'].calls, ...jsApiOf('event-ingest'), '$JS.ACK.>', ...STORED_ANNOUNCEMENTS],
      deny: [KV(kvBuckets.workers), ...destructiveJsApiOf('event-ingest')],
    },
    subscribe: { allow: [INBOXES, ...NATS_REQUESTS['event-ingest'].serves] },
    allow_responses: ANSWERS,
  },
  control: {
    // Its decisions are appended by event-ingest, asked on svc.events.decide.<partition>; its
    // incoming events are the approvals' facts (votes, escalations: docs/teams.md).
    publish: {
      allow: [...NATS_REQUESTS.control.calls, ...jsApiOf('control'), '$JS.ACK.>', subjects.incomingAll, subjects.webhooksAll, subjects.auditHeads],
      deny: [...STORED_ANNOUNCEMENTS, KV(kvBuckets.workers), ...destructiveJsApiOf('control')],
    },
    subscribe: { allow: [INBOXES, ...NATS_REQUESTS.control.serves, wildcard(subjects.controlEventsAll)] },
    allow_responses: ANSWERS,
  },
  session: {
    publish: {
      allow: [
        ...NATS_REQUESTS.session.calls,
        ...jsApiOf('session'),
        '$JS.ACK.>',
        subjects.incomingAll,
        wildcard(subjects.workerStatusAll),
        KV(kvBuckets.workers),
        LOG_DELIVERIES,
        // A workspace's whole patch, read in its sandbox, kept for the gateway to serve (docs/workspace.md).
        OBJECTS(objectBuckets.workspacePatches),
        FLOW_CONTROL,
      ],
      deny: [...STORED_ANNOUNCEMENTS, subjects.decisionAppendAll, ...destructiveJsApiOf('session')],
    },
    subscribe: {
      allow: [INBOXES, ...NATS_REQUESTS.session.serves, wildcard(subjects.workerAliveAll), subjects.logFollowKeepalive('*'), subjects.logFollowStop('*')],
    },
    allow_responses: ANSWERS,
  },
};

/** Fresh random passwords for every user (the local stack and the tests; Helm makes its own). */
function generateNatsCredentials(): NatsCredentials {
  const credential = (user: NatsUser): NatsCredential => ({ user, password: randomBytes(24).toString('base64url') });
  return Object.fromEntries(ALL_USERS.map((user) => [user, credential(user)])) as Record<NatsUser, NatsCredential>;
}

/** Who may connect to a nats-server that `@svc/nats-server` starts: these users (fresh ones by default), and the config admitting them. */
export function natsAuthorization(credentials: NatsCredentials = generateNatsCredentials()): { credentials: NatsCredentials; config: string } {
  return { credentials, config: natsAuthorizationConfig(credentials) };
}

/** The `authorization` block of a nats-server config (JSON is valid NATS config) for these credentials. */
export function natsAuthorizationConfig(credentials: NatsCredentials): string {
  const users = [
    ...NATS_SERVICE_USERS.map((user) => ({ user, password: credentials[user].password, permissions: NATS_PERMISSIONS[user] })),
    // No permissions block: everything.
    { user: NATS_OPERATOR_USER, password: credentials.operator.password },
  ];
  return `authorization: ${JSON.stringify({ users }, null, 2)}\n`;
}

/**
 * Every user's credentials from a directory holding one file per user, named after it, with its
 * password (a Kubernetes Secret mounted as a volume: the chart's single mode).
 */
export async function readNatsCredentialsDir(dir: string): Promise<NatsCredentials> {
  const entries = await Promise.all(
    ALL_USERS.map(async (user) => {
      const file = path.join(dir, user);
      const password = (
        await readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
          throw new Error(`the NATS password of user ${user} cannot be read from ${file} (${err.code ?? 'error'})`);
        })
      ).trim();
      if (password === '') throw new Error(`${file} is empty: it holds the NATS password of user ${user}`);
      return [user, { user, password }] as const;
    }),
  );
  return Object.fromEntries(entries) as Record<NatsUser, NatsCredential>;
}

/** The chart's copy of `NATS_PERMISSIONS` (helm/svc/files/nats-permissions.json), as it must read. */
export function natsPermissionsFile(): string {
  return `${JSON.stringify(NATS_PERMISSIONS, null, 2)}\n`;
}
