import { existsSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Kvm } from '@nats-io/kv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIncomingEventPublisher, requestJson } from '@svc/bus';
import { kvBuckets, subjects, type EventData, type SessionLogMessageType, type SidecarConfig, type StoredEvent, type WorkerRecord } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { ADMIN, ALICE, BOB, startSessionFixture, type SessionFixture } from '../test/fixture.js';
import { createSessionStore } from './session-store.js';

const sleeper = `
[agent]
command = "sleep"
args = ["600"]
`;

const stepsOf = (events: StoredEvent[]) =>
  events
    .filter((e) => e.type === 'system' && (e.data as EventData<'system'>).subtype === 'spawn_step')
    .map((e) => {
      const details = (e.data as EventData<'system'>).details as { step: string; status: string };
      return `${details.step}:${details.status}`;
    });

describe('session service — sessions and the spawn pipeline', () => {
  let fixture: SessionFixture;
  beforeAll(async () => {
    fixture = await startSessionFixture({ SVC_SIDECAR_LOST_AFTER_MS: '2000' }, { DEMO_KEY: 'from-the-host', OPTIONAL_SET: 'also' });
    await fixture.writeTemplate('sleeper', sleeper);
  });
  afterAll(() => fixture?.stop());

  const workerRecord = async (workerId: string) => (await (await new Kvm(fixture.bus.nc).open(kvBuckets.workers)).get(workerId))!.json<WorkerRecord>();
  const sandboxDir = (workerId: string) => path.join(fixture.sandboxesDir, workerId);

  it('spawns a template without [sidecar]: every step reported in order, 6.5 skipped, then running', async () => {
    const created = await fixture.create(ALICE, { template: 'sleeper' });
    expect(created).toMatchObject({ template: 'sleeper', owner: 'alice', status: 'pending' });
    expect(created.id).toMatch(/^ses_/);
    await fixture.waitForStatus(created.id, 'running');
    const events = await waitFor('the finalize step stored', async () => {
      const stored = await fixture.events(created.worker_id);
      return stepsOf(stored).includes('finalize:done') ? stored : undefined;
    });
    expect(stepsOf(events)).toEqual([
      'validate:done',
      'allocate_worker:done',
      'create_sandbox:done',
      'prepare_workspace:done',
      'clone_repository:skipped',
      'env_and_files:done',
      'credential_proxy:done',
      'sidecar:skipped',
      'start_agent:done',
      'finalize:done',
    ]);
    expect((await workerRecord(created.worker_id)).session_id).toBe(created.id);
  });

  it('step 6.5 deploys the sidecar exactly as the spec says: binary, token, config from [sidecar], started with SVC_SIDECAR_CONFIG', async () => {
    await fixture.writeTemplate(
      'with-sidecar',
      `
[agent]
command = "/bin/echo"
args = ["hi"]
env = { FROM_TEMPLATE = "t" }
pass_env = ["DEMO_KEY"]
pass_env_optional = ["OPTIONAL_SET", "OPTIONAL_UNSET"]
[sidecar]
adapter = "generic"
auto_approve = ["Read"]
deny = ["Bash(rm *)"]
ask = ["Write"]
poll_interval_ms = 250
decision_timeout_s = 30
on_timeout = "allow"
`,
    );
    const created = await fixture.create(ALICE, { template: 'with-sidecar', prompt: 'go', overrides: { env: { FROM_REQUEST: 'r' } } });
    const events = await waitFor('the sidecar step done', async () => {
      const stored = await fixture.events(created.worker_id);
      return stepsOf(stored).includes('finalize:done') ? stored : undefined;
    });
    expect(stepsOf(events).slice(7)).toEqual([
      'sidecar.select_binary:done',
      'sidecar.upload_binary:done',
      'sidecar.read_token:done',
      'sidecar.build_config:done',
      'sidecar.upload_config:done',
      'sidecar.start:done',
      'finalize:done',
    ]);
    const root = path.join(sandboxDir(created.worker_id), 'root');
    const config = JSON.parse(await readFile(path.join(root, 'etc/svc/sidecar.json'), 'utf8')) as SidecarConfig;
    const token = (await readFile(path.join(root, 'var/run/svc/token'), 'utf8')).trim();
    expect(config).toMatchObject({
      adapter: 'generic',
      worker_id: created.worker_id,
      control_plane_url: 'http://127.0.0.1:9',
      auth_token: token,
      auth_token_file: '/var/run/svc/token',
      autonomous: false,
      conversation: false,
      permissions: { auto_approve: ['Read'], deny: ['Bash(rm *)'], ask: ['Write'] },
      poll_interval_ms: 250,
      agent: {
        command: '/bin/echo',
        args: ['hi'],
        env: { FROM_TEMPLATE: 't', DEMO_KEY: 'from-the-host', OPTIONAL_SET: 'also', FROM_REQUEST: 'r' },
        prompt: 'go',
      },
      state_dir: '/var/lib/svc-sidecar',
    });
    expect(config.agent.env).not.toHaveProperty('OPTIONAL_UNSET');
    expect((await readFile(path.join(root, 'usr/local/bin/svc-sidecar'))).subarray(1, 4).toString()).toBe('ELF');
    // The token is never in a step event.
    expect(JSON.stringify(events)).not.toContain(token);
    // The decision deadline comes from the template.
    expect((await workerRecord(created.worker_id)).decision_policy).toEqual({ decision_timeout_s: 30, on_timeout: 'allow' });
    // So does how the agent runs: the gateway refuses messages to a one-shot worker.
    expect((await workerRecord(created.worker_id)).mode).toBe('one_shot');
    // The sidecar really started (it says so in the sandbox's logs, without the token).
    const log = await waitFor('the sidecar starting', async () => {
      const text = await readFile(path.join(sandboxDir(created.worker_id), 'sandbox.log'), 'utf8');
      return text.includes('svc-sidecar: starting') ? text : undefined;
    });
    expect(log).not.toContain(token);
  });

  it('a sidecar that never polls is lost: the session fails with sidecar_lost and its sandbox is stopped', async () => {
    // The sidecars here cannot reach a gateway (port 9), so none ever polls; the fixture's deadline is 2 s.
    const created = await fixture.create(ALICE, { template: 'with-sidecar' });
    const failed = await fixture.waitForStatus(created.id, 'failed', 15_000);
    expect(failed.failure).toMatchObject({ step: 'liveness' });
    expect(failed.failure!.reason).toMatch(/^sidecar_lost/);
    expect(failed.ended_at).toBeDefined();
    expect((await workerRecord(created.worker_id)).token_hash).toBeUndefined();
  });

  it('ends a worker on its agent_exit event: code 0 completed, else failed with the code', async () => {
    const incoming = createIncomingEventPublisher(fixture.bus.nc, 'worker');
    const exit = async (workerId: string, code: number) => {
      const data: EventData<'system'> = { level: 'info', message: `agent exited with code ${code}`, subtype: 'agent_exit', details: { code, signal: null } };
      const uid = `test:exit`;
      await incoming.publish(workerId, { type: 'system', uid, ts: new Date().toISOString(), data });
    };
    const good = await fixture.create(ALICE, { template: 'sleeper' });
    const bad = await fixture.create(ALICE, { template: 'sleeper' });
    await fixture.waitForStatus(good.id, 'running');
    await fixture.waitForStatus(bad.id, 'running');
    await exit(good.worker_id, 0);
    await exit(bad.worker_id, 3);
    expect((await fixture.waitForStatus(good.id, 'completed')).failure).toBeUndefined();
    expect((await fixture.waitForStatus(bad.id, 'failed')).failure).toEqual({ step: 'agent', reason: 'the agent exited with code 3' });
    expect((await workerRecord(good.worker_id)).status).toBe('completed');
    // The session has ended: its token is refused from now on.
    await waitFor('the token revoked', async () => (await workerRecord(good.worker_id)).token_hash === undefined);
  });

  it('DELETE stops the agent, destroys the sandbox, revokes the token: stopped; again is harmless', async () => {
    const created = await fixture.create(ALICE, { template: 'sleeper' });
    await fixture.waitForStatus(created.id, 'running');
    const pids = JSON.parse(await readFile(path.join(sandboxDir(created.worker_id), 'pids.json'), 'utf8')) as { launcher: number };
    expect((await workerRecord(created.worker_id)).token_hash).toBeDefined();
    const deleted = await fixture.remove(ALICE, created.id);
    expect(deleted).toMatchObject({ status: 'stopped' });
    expect(existsSync(sandboxDir(created.worker_id))).toBe(false);
    expect(() => process.kill(pids.launcher, 0)).toThrow();
    const record = await workerRecord(created.worker_id);
    expect(record.status).toBe('stopped');
    expect(record.token_hash).toBeUndefined();
    expect(await fixture.remove(ALICE, created.id)).toMatchObject({ status: 'stopped' });
    // An ended session keeps its status when deleted.
  });

  it('a failed step fails the session with the step and reason, and undoes what earlier steps made', async () => {
    await fixture.writeTemplate('bad-file', `${sleeper}\n[[files]]\npath = "/etc/passwd"\ncontent = "pwned"\n`);
    const created = await fixture.create(ALICE, { template: 'bad-file' });
    const failed = await fixture.waitForStatus(created.id, 'failed');
    expect(failed.failure?.step).toBe('env_and_files');
    expect(failed.failure?.reason).toMatch(/not inside one of the sandbox's own directories/);
    expect(existsSync(sandboxDir(created.worker_id))).toBe(false);
    expect((await workerRecord(created.worker_id)).token_hash).toBeUndefined();
    const steps = stepsOf(
      await waitFor('the failed step stored', async () => {
        const stored = await fixture.events(created.worker_id);
        return stepsOf(stored).some((s) => s.endsWith(':failed')) ? stored : undefined;
      }),
    );
    expect(steps.at(-1)).toBe('env_and_files:failed');
    expect(steps).not.toContain('credential_proxy:done');
  });

  it('a missing sidecar binary fails step 6.5.1 with a message that says how to build it', async () => {
    const other = await startSessionFixture({ SVC_SIDECAR_BINARY: '/nonexistent/svc-sidecar' });
    try {
      await other.writeTemplate('s', `[agent]\ncommand = "/bin/true"\n[sidecar]\nadapter = "generic"\n`);
      const created = await other.create(ALICE, { template: 's' });
      const failed = await other.waitForStatus(created.id, 'failed');
      expect(failed.failure).toEqual({
        step: 'sidecar.select_binary',
        reason: expect.stringMatching(/not at \/nonexistent\/svc-sidecar: build it with `npx nx run @svc\/sidecar:executable`/) as unknown as string,
      });
      expect(await readdir(other.sandboxesDir)).toEqual([]);
    } finally {
      await other.stop();
    }
  });

  it('a session service that stops during a spawn fails the session at once (spawn_interrupted) and undoes the sandbox, without waiting for the spawn', async () => {
    const other = await startSessionFixture();
    try {
      await other.writeTemplate('s', `[agent]\ncommand = "sleep"\nargs = ["600"]\n[sidecar]\nadapter = "generic"\n`);
      const created = await other.create(ALICE, { template: 's' });
      const started = Date.now();
      await other.service.stop();
      expect(Date.now() - started).toBeLessThan(5000);
      const stored = await createSessionStore(other.database.db).get(created.id);
      expect(stored?.session.status).toBe('failed');
      expect(stored?.session.failure?.reason).toMatch(/^spawn_interrupted: the session service stopped during the spawn/);
      expect(await readdir(other.sandboxesDir).catch(() => [])).toEqual([]);
    } finally {
      await other.stop();
    }
  });

  it('without bubblewrap (process isolation): a template that asks for a sealed sandbox is refused, saying what is missing, unless the operator opts in', async () => {
    const [unsealed, optedIn] = await Promise.all([
      startSessionFixture({ SVC_SANDBOX_ISOLATION: 'process' }),
      startSessionFixture({ SVC_SANDBOX_ISOLATION: 'process', SVC_SANDBOX_ALLOW_UNSEALED: 'true' }),
    ]);
    try {
      for (const fixtureHere of [unsealed, optedIn]) {
        await fixtureHere.writeTemplate('sealed', `[agent]\ncommand = "/bin/true"\n`);
        await fixtureHere.writeTemplate('open', `[agent]\ncommand = "/bin/true"\n[sandbox]\nsealed = false\n`);
      }
      await expect(unsealed.create(ALICE, { template: 'sealed' })).rejects.toMatchObject({
        code: 'invalid_template',
        message: expect.stringMatching(
          /asks for a sealed sandbox .*cannot seal one .*install bubblewrap, or let the operator set SVC_SANDBOX_ALLOW_UNSEALED=true/,
        ) as unknown as string,
      });
      expect(await readdir(unsealed.sandboxesDir).catch(() => [])).toEqual([]);
      // A template that asks for no seal runs; so does a sealed one where the operator accepts it.
      // (Without a [sidecar] nothing reports the agent's end: running is as far as they go.)
      await unsealed.waitForStatus((await unsealed.create(ALICE, { template: 'open' })).id, 'running');
      const accepted = await optedIn.create(ALICE, { template: 'sealed' });
      await optedIn.waitForStatus(accepted.id, 'running');
      const created = (await optedIn.events(accepted.worker_id)).find(
        (e): e is StoredEvent<'system'> => e.type === 'system' && e.data.details?.['step'] === 'create_sandbox',
      );
      expect(created!.data.details).toMatchObject({ isolation: 'process', sealed: false });
    } finally {
      await Promise.all([unsealed.stop(), optedIn.stop()]);
    }
  });

  it("a session budget needs a template that names a model API; a session budget lowers the template's, never raises it; the egress policy is recorded", async () => {
    await fixture.writeTemplate(
      'metered',
      `[agent]\ncommand = "/bin/true"\n[model]\napi = "anthropic"\nmax_tokens = 1000\n[sandbox]\negress = ["registry.npmjs.org:443"]\n[sidecar]\nadapter = "generic"\ndeny = ["Bash(rm *)", "network(*.evil.example:*)"]\n`,
    );
    await expect(fixture.create(ALICE, { template: 'sleeper', overrides: { budget: { max_tokens: 5 } } })).rejects.toMatchObject({
      code: 'invalid_request',
      message: expect.stringMatching(/names no model API/) as unknown as string,
    });
    const lowered = await fixture.create(ALICE, { template: 'metered', overrides: { budget: { max_tokens: 10, max_cost_usd: 0.5 } } });
    const raised = await fixture.create(ALICE, { template: 'metered', overrides: { budget: { max_tokens: 1_000_000 } } });
    expect((await workerRecord(lowered.worker_id)).model).toEqual({ apis: ['anthropic'], budget: { max_tokens: 10, max_cost_usd: 0.5 } });
    expect((await workerRecord(raised.worker_id)).model).toEqual({ apis: ['anthropic'], budget: { max_tokens: 1000 } });
    // Its tunnels are decided by the gateway from the record: the list, the network deny rules, the mode.
    expect((await workerRecord(lowered.worker_id)).egress).toEqual({
      allow: ['registry.npmjs.org:443'],
      deny: ['network(*.evil.example:*)'],
      autonomous: false,
    });
  });

  it('refuses an invalid template (400 naming the file and key), an unknown one, and an unset pass_env, making nothing', async () => {
    await fixture.writeTemplate('broken', `[agent]\ncommand = "x"\n[sidecar]\nadapter = "gpt"\n`);
    await fixture.writeTemplate('needs-key', `[agent]\ncommand = "x"\npass_env = ["NOT_SET_ANYWHERE"]\n`);
    const sandboxDirs = () => readdir(fixture.sandboxesDir).catch(() => [] as string[]);
    const before = new Set(await sandboxDirs());
    const listed = await requestJson<{ total: number }>(fixture.bus.nc, subjects.rpc.listSessions, { caller: ADMIN, limit: 1, offset: 0 });
    await expect(fixture.create(ALICE, { template: 'broken' })).rejects.toMatchObject({
      code: 'invalid_template',
      message: expect.stringMatching(/broken\.toml: .*\/sidecar\/adapter/) as unknown as string,
    });
    await expect(fixture.create(ALICE, { template: 'nope' })).rejects.toMatchObject({ code: 'template_not_found' });
    await expect(fixture.create(ALICE, { template: 'needs-key' })).rejects.toMatchObject({
      code: 'invalid_template',
      message: expect.stringMatching(/NOT_SET_ANYWHERE/) as unknown as string,
    });
    await expect(fixture.create(ALICE, { template: 'sleeper', overrides: { env: { 'BAD NAME': 'x' } } })).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(fixture.create(ALICE, { template: 'sleeper', prompt: 'hi' })).rejects.toMatchObject({
      code: 'invalid_request',
      message: expect.stringMatching(/no \[sidecar\] section/) as unknown as string,
    });
    expect((await requestJson<{ total: number }>(fixture.bus.nc, subjects.rpc.listSessions, { caller: ADMIN, limit: 1, offset: 0 })).total).toBe(listed.total);
    // No sandbox either: a directory that appeared meanwhile is a spawn of an earlier test's session still under way.
    const sessions = await requestJson<{ items: Array<{ worker_id: string }> }>(fixture.bus.nc, subjects.rpc.listSessions, {
      caller: ADMIN,
      limit: 500,
      offset: 0,
    });
    const earlier = new Set(sessions.items.map((session) => session.worker_id));
    expect((await sandboxDirs()).filter((dir) => !before.has(dir) && !earlier.has(dir))).toEqual([]);
  });

  it('shows a session only to its owner (anyone else: session_not_found) and everything to an admin; lists newest first, by status, paged', async () => {
    const mine = await fixture.create(BOB, { template: 'sleeper' });
    await expect(fixture.get(ALICE, mine.id)).rejects.toMatchObject({ code: 'session_not_found' });
    await expect(fixture.remove(ALICE, mine.id)).rejects.toMatchObject({ code: 'session_not_found' });
    expect((await fixture.get(ADMIN, mine.id)).owner).toBe('bob');
    await fixture.waitForStatus(mine.id, 'running');
    const second = await fixture.create(BOB, { template: 'sleeper' });
    await fixture.waitForStatus(second.id, 'running');
    const list = (query: Record<string, unknown>) =>
      requestJson<{ items: Array<{ id: string; owner: string }>; total: number }>(fixture.bus.nc, subjects.rpc.listSessions, {
        caller: BOB,
        limit: 50,
        offset: 0,
        ...query,
      });
    const all = await list({});
    expect(all.total).toBe(2);
    expect(all.items.map((s) => s.id)).toEqual([second.id, mine.id]);
    expect((await list({ limit: 1, offset: 1 })).items.map((s) => s.id)).toEqual([mine.id]);
    await fixture.remove(BOB, second.id);
    expect((await list({ status: 'running' })).items.map((s) => s.id)).toEqual([mine.id]);
    expect((await list({ status: 'stopped' })).items.map((s) => s.id)).toEqual([second.id]);
    const everyone = await requestJson<{ items: Array<{ owner: string }> }>(fixture.bus.nc, subjects.rpc.listSessions, {
      caller: ADMIN,
      limit: 500,
      offset: 0,
    });
    expect(new Set(everyone.items.map((s) => s.owner))).toEqual(new Set(['alice', 'bob']));
    await fixture.remove(BOB, mine.id);
  });

  it("follows a sandbox's logs: the last lines, then new ones, then end when its programs have ended; stop ends it early", async () => {
    // Three lines, then the fourth once the test says so (it creates `go` in the workspace).
    await fixture.writeTemplate(
      'talker',
      `[agent]\ncommand = "sh"\nargs = ["-c", "echo one; echo two; echo three; while [ ! -e go ]; do sleep 0.05; done; echo four"]\n`,
    );
    const created = await fixture.create(ALICE, { template: 'talker' });
    await fixture.waitForStatus(created.id, 'running');
    const follow = async (caller: typeof ALICE, tail: number, followId: string, following: () => Promise<void> = async () => {}) => {
      const inbox = fixture.bus.nc.subscribe(`_INBOX.test.${followId}`);
      await requestJson(fixture.bus.nc, subjects.rpc.followLogs, { caller, session_id: created.id, tail, deliver_to: inbox.getSubject(), follow_id: followId });
      const messages: SessionLogMessageType[] = [];
      for await (const msg of inbox) {
        messages.push(msg.json<SessionLogMessageType>());
        // The tail is read after the answer: the next line comes only once it has been delivered.
        if (messages.length === 1) await following();
        if (messages.at(-1)!.kind === 'end') break;
      }
      inbox.unsubscribe();
      return messages;
    };
    // The first three lines are out before following starts, so `tail: 2` has something to cut.
    await waitFor('three lines logged', async () => (await readFile(path.join(sandboxDir(created.worker_id), 'sandbox.log'), 'utf8')).includes('three\n'));
    const messages = await follow(ALICE, 2, 'f1', () => writeFile(path.join(sandboxDir(created.worker_id), 'root', 'workspace', 'go'), ''));
    const lines = messages.flatMap((m) => (m.kind === 'lines' ? m.lines : []));
    expect(lines).toEqual(['two', 'three', 'four']);
    expect(messages.at(-1)).toEqual({ kind: 'end', reason: 'the sandbox has ended' });
    await expect(follow(BOB, 1, 'f2')).rejects.toMatchObject({ code: 'session_not_found' });

    const sleeping = await fixture.create(ALICE, { template: 'sleeper' });
    await fixture.waitForStatus(sleeping.id, 'running');
    const inbox = fixture.bus.nc.subscribe('_INBOX.test.f3');
    await requestJson(fixture.bus.nc, subjects.rpc.followLogs, {
      caller: ALICE,
      session_id: sleeping.id,
      tail: 10,
      deliver_to: inbox.getSubject(),
      follow_id: 'f3',
    });
    fixture.bus.nc.publish(subjects.logFollowStop('f3'));
    for await (const msg of inbox) {
      expect(msg.json<SessionLogMessageType>()).toEqual({ kind: 'end', reason: 'the follower stopped' });
      break;
    }
    await fixture.remove(ALICE, sleeping.id);
  });
});
