import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { kvBuckets, objectBuckets, SERVICE_NAMES, streams, subjects } from '@svc/protocol';
import { JS_STREAMS, NATS_PERMISSIONS, NATS_REQUESTS, NATS_SERVICE_USERS, natsAuthorization, type NatsPermissions, type NatsServiceUser } from './nats-auth.js';

const repoFile = (relative: string) => readFile(fileURLToPath(new URL(`../../../${relative}`, import.meta.url)), 'utf8');

/** A request/reply subject: a service's RPCs, the health of one, a decision for event-ingest to append. */
const isRequestSubject = (subject: string) => ['svc.rpc.', 'svc.health.', 'svc.events.decide.'].some((prefix) => subject.startsWith(prefix));

interface TableRow {
  calls: string[];
  serves: string[];
}

/** docs/nats-security.md's "Who may call what": per user, the backticked subjects of its two columns. */
function callTableOf(markdown: string): Record<string, TableRow> {
  const section = markdown.split(/^## /m).find((part) => part.startsWith('Who may call what'));
  if (!section) throw new Error('docs/nats-security.md has no section "Who may call what"');
  const rows: Record<string, TableRow> = {};
  for (const line of section.split('\n').filter((l) => /^\| `/.test(l))) {
    const [user, calls, serves] = line
      .split('|')
      .slice(1, 4)
      .map((cell) => [...cell.matchAll(/`([^`]+)`/g)].map((match) => match[1]!));
    rows[user![0]!] = { calls: calls!, serves: serves! };
  }
  return rows;
}

/** Per user, the request subjects the nats-server config lets it publish and subscribe to. */
function requestSubjectsOf(permissions: Record<string, NatsPermissions>): Record<string, TableRow> {
  return Object.fromEntries(
    Object.entries(permissions).map(([user, { publish, subscribe }]) => [
      user,
      { calls: publish.allow.filter(isRequestSubject), serves: subscribe.allow.filter(isRequestSubject) },
    ]),
  );
}

const sorted = (rows: Record<string, TableRow>) =>
  Object.fromEntries(Object.entries(rows).map(([user, row]) => [user, { calls: [...row.calls].sort(), serves: [...row.serves].sort() }]));

describe('NATS least privilege: who may call what', () => {
  it("nats permissions — docs/nats-security.md's table is what the generated nats-server config allows, service by service", async () => {
    const table = callTableOf(await repoFile('docs/nats-security.md'));
    const config = natsAuthorization().config;
    const users = (JSON.parse(config.replace(/^authorization: /, '')) as { users: Array<{ user: string; permissions?: NatsPermissions }> }).users;
    const configured = Object.fromEntries(users.filter((u) => u.permissions).map((u) => [u.user, u.permissions!]));
    expect(Object.keys(table).sort()).toEqual([...NATS_SERVICE_USERS].sort());
    expect(sorted(table)).toEqual(sorted(requestSubjectsOf(configured)));
  });

  it("nats permissions — the Helm chart's copy allows the same (files/nats-permissions.json is NATS_PERMISSIONS)", async () => {
    const chart = JSON.parse(await repoFile('helm/svc/files/nats-permissions.json')) as Record<string, NatsPermissions>;
    expect(chart, 'regenerate it: npx nx run @svc/bus:build && node deploy/helm-tests/scripts/write-nats-permissions.mjs').toEqual(NATS_PERMISSIONS);
  });

  it('nats permissions — every RPC has exactly one service serving it, and every call is served', () => {
    const servers = (subject: string) => NATS_SERVICE_USERS.filter((user) => NATS_REQUESTS[user].serves.includes(subject));
    for (const subject of Object.values(subjects.rpc)) expect(servers(subject), subject).toHaveLength(1);
    for (const service of SERVICE_NAMES) expect(servers(subjects.health(service)), service).toEqual([service]);
    for (const user of NATS_SERVICE_USERS) {
      for (const subject of NATS_REQUESTS[user].calls) expect(servers(subject), `${user} calls ${subject}`).toHaveLength(1);
    }
  });

  it('nats permissions — only the gateway may decide; the session service calls nothing but audit facts and the purge of events', () => {
    const callers = (subject: string): NatsServiceUser[] => NATS_SERVICE_USERS.filter((user) => NATS_PERMISSIONS[user].publish.allow.includes(subject));
    expect(callers(subjects.rpc.decide)).toEqual(['gateway']);
    expect(NATS_REQUESTS.session.calls).toEqual([subjects.rpc.appendAudit, subjects.rpc.purgeEvents]);
    // No wildcard lets a service call more than its list.
    for (const user of NATS_SERVICE_USERS) expect(NATS_PERMISSIONS[user].publish.allow.filter((s) => s.startsWith('svc.rpc.') && s.endsWith('>'))).toEqual([]);
  });

  it('nats permissions — no service publishes to an inbox at will: each answers under allow_responses (the session its log lines only)', () => {
    for (const user of NATS_SERVICE_USERS) {
      const inboxes = NATS_PERMISSIONS[user].publish.allow.filter((subject) => subject.startsWith('_INBOX.'));
      expect(inboxes, user).toEqual(user === 'session' ? ['_INBOX.logs.>'] : []);
      expect(NATS_PERMISSIONS[user].allow_responses.max, user).toBe(1);
    }
  });
});

/** Whether a NATS subject pattern (`*` one token, `>` the rest) matches a subject. */
function subjectMatches(pattern: string, subject: string): boolean {
  const wanted = pattern.split('.');
  const tokens = subject.split('.');
  for (const [index, token] of wanted.entries()) {
    if (token === '>') return tokens.length > index;
    if (index >= tokens.length || (token !== '*' && token !== tokens[index])) return false;
  }
  return wanted.length === tokens.length;
}

/** What nats-server decides for a publish: an allow must match, and no deny (a deny wins). */
const mayPublish = (user: NatsServiceUser, subject: string) =>
  NATS_PERMISSIONS[user].publish.allow.some((pattern) => subjectMatches(pattern, subject)) &&
  !(NATS_PERMISSIONS[user].publish.deny ?? []).some((pattern) => subjectMatches(pattern, subject));

const SVC_STREAMS = [
  ...Object.values(streams).map((stream) => stream.name),
  ...Object.values(kvBuckets).map((bucket) => `KV_${bucket}`),
  ...Object.values(objectBuckets).map((bucket) => `OBJ_${bucket}`),
];

/** docs/nats-security.md's "Streams" table: per user, the backticked streams it may create, update, delete or purge. */
function streamTableOf(markdown: string): Record<string, { create: string[]; update: string[]; remove: string[] }> {
  const section = markdown.split(/^## /m).find((part) => part.startsWith('Streams: who may create, update, delete'));
  if (!section) throw new Error('docs/nats-security.md has no section "Streams: who may create, update, delete"');
  const rows: Record<string, { create: string[]; update: string[]; remove: string[] }> = {};
  for (const line of section.split('\n').filter((l) => /^\| `/.test(l))) {
    const [user, create, update, remove] = line
      .split('|')
      .slice(1, 5)
      .map((cell) => [...cell.matchAll(/`([^`]+)`/g)].map((match) => match[1]!));
    rows[user![0]!] = { create: create!, update: update!, remove: remove! };
  }
  return rows;
}

describe('NATS least privilege: what a service may do to the streams', () => {
  it('nats permissions — the helper matches subjects as nats-server does', () => {
    expect(subjectMatches('$JS.API.STREAM.DELETE.>', '$JS.API.STREAM.DELETE.SVC_AUDIT_HEADS')).toBe(true);
    expect(subjectMatches('$JS.API.STREAM.INFO.*', '$JS.API.STREAM.INFO.SVC_AUDIT_HEADS')).toBe(true);
    expect(subjectMatches('$JS.API.STREAM.INFO.*', '$JS.API.STREAM.INFO')).toBe(false);
    expect(subjectMatches('$JS.API.>', '$JS.API')).toBe(false);
    expect(subjectMatches('$JS.API.STREAM.UPDATE.SVC_WEBHOOKS', '$JS.API.STREAM.UPDATE.SVC_AUDIT_HEADS')).toBe(false);
  });

  it("nats permissions — docs/nats-security.md's streams table is what each service may create and update, subject by subject", async () => {
    const table = streamTableOf(await repoFile('docs/nats-security.md'));
    expect(Object.keys(table).sort()).toEqual([...NATS_SERVICE_USERS, 'operator'].sort());
    for (const user of NATS_SERVICE_USERS) {
      const may = (operation: string) => SVC_STREAMS.filter((name) => mayPublish(user, `$JS.API.STREAM.${operation}.${name}`)).sort();
      expect({ create: may('CREATE'), update: may('UPDATE'), remove: [...may('DELETE'), ...may('PURGE')] }, user).toEqual({
        create: [...table[user]!.create].sort(),
        update: [...table[user]!.update].sort(),
        remove: [],
      });
      expect(table[user]!.remove, user).toEqual([]);
      expect({ create: may('CREATE'), update: may('UPDATE') }, user).toEqual({
        create: [...JS_STREAMS[user].create].sort(),
        update: [...JS_STREAMS[user].update].sort(),
      });
    }
  });

  it('nats permissions — no service may delete, purge or update SVC_AUDIT_HEADS, delete a head, or delete or purge any stream: each is denied, not only left out', () => {
    for (const user of NATS_SERVICE_USERS) {
      for (const operation of ['DELETE', 'PURGE', 'UPDATE', 'MSG.DELETE', 'SNAPSHOT', 'RESTORE'])
        expect(mayPublish(user, `$JS.API.STREAM.${operation}.${streams.auditHeads.name}`), `${user} ${operation}`).toBe(false);
      for (const name of [...SVC_STREAMS, 'ANY_OTHER_STREAM'])
        for (const operation of ['DELETE', 'PURGE', 'MSG.DELETE'])
          expect(mayPublish(user, `$JS.API.STREAM.${operation}.${name}`), `${user} ${operation} ${name}`).toBe(false);
      // Not the whole API: a stream svc does not know may not be made or changed either.
      expect(NATS_PERMISSIONS[user].publish.allow, user).not.toContain('$JS.API.>');
      for (const operation of ['CREATE', 'UPDATE'])
        expect(mayPublish(user, `$JS.API.STREAM.${operation}.ANY_OTHER_STREAM`), `${user} ${operation}`).toBe(false);
      // Denied outright, so that a wider allow added later cannot let them through.
      const deny = NATS_PERMISSIONS[user].publish.deny ?? [];
      expect(deny, user).toEqual(expect.arrayContaining(['$JS.API.STREAM.DELETE.>', '$JS.API.STREAM.PURGE.>', '$JS.API.STREAM.MSG.DELETE.>']));
      expect(
        deny.some((pattern) => subjectMatches(pattern, `$JS.API.STREAM.UPDATE.${streams.auditHeads.name}`)),
        user,
      ).toBe(true);
    }
    // Only the services that declare the streams update them; the gateway and the session service are denied every update.
    expect(NATS_PERMISSIONS.gateway.publish.deny).toContain('$JS.API.STREAM.UPDATE.>');
    expect(NATS_PERMISSIONS.session.publish.deny).toContain('$JS.API.STREAM.UPDATE.>');
  });

  it('nats permissions — what the services do with JetStream is allowed: read stream info and messages, follow consumers, publish heads (control alone)', () => {
    for (const user of NATS_SERVICE_USERS) {
      for (const subject of [
        '$JS.API.INFO',
        '$JS.API.STREAM.NAMES',
        `$JS.API.STREAM.INFO.${streams.auditHeads.name}`,
        `$JS.API.DIRECT.GET.KV_${kvBuckets.workers}.$KV.${kvBuckets.workers}.wrk_1`,
        `$JS.API.STREAM.MSG.GET.KV_${kvBuckets.workers}`,
        `$JS.API.CONSUMER.CREATE.KV_${kvBuckets.workers}.watch.$KV.${kvBuckets.workers}.>`,
        `$JS.API.CONSUMER.MSG.NEXT.${streams.storedEvents.name}.viewer`,
      ])
        expect(mayPublish(user, subject), `${user} ${subject}`).toBe(true);
    }
    expect(NATS_SERVICE_USERS.filter((user) => mayPublish(user, subjects.auditHeads))).toEqual(['control']);
  });
});
