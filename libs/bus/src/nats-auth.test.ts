import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SERVICE_NAMES, subjects } from '@svc/protocol';
import { NATS_PERMISSIONS, NATS_REQUESTS, NATS_SERVICE_USERS, natsAuthorization, type NatsPermissions, type NatsServiceUser } from './nats-auth.js';

const repoFile = (relative: string) => readFile(fileURLToPath(new URL(`../../../${relative}`, import.meta.url)), 'utf8');

/** A request/reply subject: a service's RPCs, the health of one, the hand-over of a decision. */
const isRequestSubject = (subject: string) => ['svc.rpc.', 'svc.health.', 'svc.events.elsewhere.'].some((prefix) => subject.startsWith(prefix));

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
