import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { kvBuckets, streams, subjects } from '@svc/protocol';

/**
 * NATS is internal and authenticated (docs/nats-security.md): every service connects as its own
 * user, which may publish and subscribe only the subjects it needs; a connection without
 * credentials is refused. `operator` can do everything: the local stack's own connection and
 * the tests' (it creates streams and reads anything); no service runs as it.
 */
export const NATS_SERVICE_USERS = ['gateway', 'event-ingest', 'control', 'session'] as const;
export type NatsServiceUser = (typeof NATS_SERVICE_USERS)[number];
export const NATS_OPERATOR_USER = 'operator';
export type NatsUser = NatsServiceUser | typeof NATS_OPERATOR_USER;
const ALL_USERS: readonly NatsUser[] = [...NATS_SERVICE_USERS, NATS_OPERATOR_USER];

export interface NatsCredential {
  user: NatsUser;
  password: string;
}
export type NatsCredentials = Readonly<Record<NatsUser, NatsCredential>>;

interface SubjectRules {
  allow: string[];
  deny?: string[];
}
export interface NatsPermissions {
  publish: SubjectRules;
  subscribe: SubjectRules;
}

/** `svc.events.incoming.>` and the like, from the protocol's subject builders (one place spells them). */
const wildcard = (subject: string) => subject.replace(/\.\*$/, '.>');
const KV = (bucket: string) => `$KV.${bucket}.>`;

/**
 * What every service does: answer and receive replies (`_INBOX.>`), use JetStream's API (its
 * consumers, KV reads and watches, stream info), ask and answer health.
 */
const COMMON_PUBLISH = ['_INBOX.>', '$JS.API.>', 'svc.health.>'];
const COMMON_SUBSCRIBE = ['_INBOX.>'];
/**
 * JetStream operations that destroy or rewrite what is kept: only the operator (and the owner
 * of the data) may. Deleting a consumer is refused on svc's streams, which hold the services'
 * durable consumers, not on the KV buckets': a watch of a bucket (an ordered consumer) that
 * resets, as it does when a server of a cluster is lost, deletes the consumer it leaves.
 */
const DESTRUCTIVE_JS_API = [
  '$JS.API.STREAM.DELETE.>',
  '$JS.API.STREAM.PURGE.>',
  '$JS.API.STREAM.MSG.DELETE.>',
  '$JS.API.STREAM.UPDATE.>',
  ...Object.values(streams).map((stream) => `$JS.API.CONSUMER.DELETE.${stream.name}.>`),
];
/** The subjects only event-ingest, the one announcer of stored events, may publish (decisions included: docs/architecture.md). */
const STORED_ANNOUNCEMENTS = [subjects.storedAll, subjects.lifecycleAll, wildcard(subjects.controlEventsAll)];

/**
 * Each service's subjects. The gateway, the one service the outside reaches, is held tightest:
 * it may publish incoming events and requests, never a stored event's announcement, a worker
 * record or status, and it may not delete or rewrite streams.
 */
export const NATS_PERMISSIONS: Readonly<Record<NatsServiceUser, NatsPermissions>> = {
  gateway: {
    publish: {
      allow: [...COMMON_PUBLISH, subjects.incomingAll, 'svc.rpc.>', 'svc.session.logs.>', wildcard(subjects.workerAliveAll), KV(kvBuckets.modelUsage)],
      // Removing a worker's events is the session service's decision (retention), never the outside's.
      deny: [
        ...STORED_ANNOUNCEMENTS,
        subjects.storedElsewhereAll,
        wildcard(subjects.workerStatusAll),
        KV(kvBuckets.workers),
        subjects.rpc.purgeEvents,
        ...DESTRUCTIVE_JS_API,
      ],
    },
    subscribe: { allow: [...COMMON_SUBSCRIBE, subjects.storedAll, wildcard(subjects.workerStatusAll), subjects.health('gateway')] },
  },
  'event-ingest': {
    publish: { allow: [...COMMON_PUBLISH, '$JS.ACK.>', ...STORED_ANNOUNCEMENTS], deny: [KV(kvBuckets.workers)] },
    subscribe: { allow: [...COMMON_SUBSCRIBE, 'svc.rpc.events.>', subjects.storedElsewhereAll, subjects.health('event-ingest')] },
  },
  control: {
    // A decision it stores goes to event-ingest, which announces it (svc.events.elsewhere.<partition>, or durably the worker's incoming partition).
    publish: {
      allow: [...COMMON_PUBLISH, '$JS.ACK.>', subjects.incomingAll, subjects.storedElsewhereAll, 'svc.rpc.>', subjects.webhooksAll, subjects.auditHeads],
      deny: [...STORED_ANNOUNCEMENTS, KV(kvBuckets.workers)],
    },
    subscribe: { allow: [...COMMON_SUBSCRIBE, 'svc.rpc.control.>', wildcard(subjects.controlEventsAll), subjects.health('control')] },
  },
  session: {
    publish: {
      allow: [...COMMON_PUBLISH, '$JS.ACK.>', subjects.incomingAll, 'svc.rpc.>', wildcard(subjects.workerStatusAll), KV(kvBuckets.workers)],
      deny: [...STORED_ANNOUNCEMENTS, subjects.storedElsewhereAll],
    },
    subscribe: { allow: [...COMMON_SUBSCRIBE, 'svc.rpc.session.>', wildcard(subjects.workerAliveAll), 'svc.session.logs.>', subjects.health('session')] },
  },
};

/** Fresh random passwords for every user (the local stack and the tests; Helm makes its own). */
export function generateNatsCredentials(): NatsCredentials {
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
