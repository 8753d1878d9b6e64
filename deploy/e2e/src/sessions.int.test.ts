import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  activityOf,
  agentExitCodeOf,
  type EventData,
  type ListResponseOf,
  type Session,
  type SessionLogMessageType,
  type StoredEvent,
  type Worker,
  type WorkspaceChanges,
} from '@svc/protocol';
import { startGitHubApi, startGitServer, waitFor, type GitHubApiStandIn, type GitServer } from '@svc/test-support';
import { fastDemoConversation } from './built-in-templates.js';
import { StreamViewer } from './readers.js';
import { sandboxEnvironments, sidecarPidOf } from './sandbox-processes.js';
import { startStack, type E2eStack } from './stack.js';

/** What a template might smuggle in, if anything ever went through a shell. */
const PWNED = '/tmp/svc-pwned';
const INJECTION = `$(touch ${PWNED}) \`touch ${PWNED}\``;

const TEMPLATES: Record<string, string> = {
  // The sidecar inside the sandbox lists the spec's paths as it sees them.
  inside: `
[agent]
command = "/bin/ls"
args = ["-l", "/etc/svc/sidecar.json", "/var/run/svc/token", "/usr/local/bin/svc-sidecar"]
[sidecar]
adapter = "generic"
`,
  injection: `
[agent]
command = "/bin/echo"
args = [${JSON.stringify(INJECTION)}, "; touch ${PWNED}"]
env = { INJECTED = ${JSON.stringify(INJECTION)} }
prompt = ${JSON.stringify(INJECTION)}
[[files]]
path = "/workspace/notes.txt"
content = ${JSON.stringify(INJECTION)}
[sidecar]
adapter = "generic"
`,
  noisy: `
[agent]
command = "sh"
args = ["-c", "echo to-stdout; echo to-stderr >&2"]
[sidecar]
adapter = "generic"
`,
  // A conversation with a line-reading agent: each message is a line on its stdin; an interrupt
  // is SIGINT, which it reports and carries on after.
  'line-reader': `
[agent]
command = "sh"
args = ["-c", '''trap 'echo interrupted; i=1' INT; while :; do i=; IFS= read -r line; s=$?; [ -n "$i" ] && continue; [ $s -ne 0 ] && exit 0; echo "got: $line"; done''']
[session]
mode = "conversation"
[sidecar]
adapter = "generic"
`,
  // The demo agent in a conversation: every further message is a turn of its own.
  'demo-talk': fastDemoConversation(),
  // Stopped after 2 s idle, and resumed by a message.
  'demo-resume': fastDemoConversation({ idle_timeout_s: 2 }),
  // Suspended after 1 s idle, its sandbox kept 1 s more.
  'demo-brief': fastDemoConversation({ idle_timeout_s: 1, keep_sandbox_s: 1 }),
  broken: `
[agent]
command = "/bin/true"
[sidecar]
adapter = "generic"
auto_approve = "everything"
`,
  'bad-step': `
[agent]
command = "/bin/true"
[[files]]
path = "/etc/passwd"
content = "x"
[sidecar]
adapter = "generic"
`,
};

/** An agent that changes the repository, commits, pushes its branch (allowed by the template) and then main (a person is asked). */
const AGENT_PUSHES = [
  'git config user.name Agent && git config user.email agent@example.com',
  "printf 'changed by the agent\\n' >> README.md && printf 'new\\n' > src/new.txt",
  "git add -A && git commit -q -m 'the agent edits the README'",
  'git push origin HEAD 2>&1 || echo the branch push failed',
  'git push origin HEAD:main 2>&1 || echo the main push was refused',
  "printf 'left for a person\\n' > notes.txt",
].join('; ');

/** Templates on the forge's repositories: one that shows what the agent finds in /workspace, and two that cannot be cloned. */
function repositoryTemplates(forgeUrl: string): Record<string, string> {
  const workspace = (section: string) => `
[agent]
command = "sh"
args = ["-c", "cat README.md; git status --short --branch; git config --get remote.origin.url; sleep 30"]
[workspace]
${section}
[sidecar]
adapter = "generic"
`;
  return {
    'repo-work': workspace(`repo = "${forgeUrl}/app.git"`),
    'repo-push': `
[agent]
command = "sh"
args = ["-c", ${JSON.stringify(AGENT_PUSHES)}]
[workspace]
repo = "${forgeUrl}/acme/shop.git"
[sidecar]
adapter = "generic"
auto_approve = ["git_push(refs/heads/svc/*)"]
`,
    'repo-big': `
[agent]
command = "sh"
args = ["-c", "head -c 15000000 /dev/urandom | base64 > big.txt; echo written; sleep 2"]
[workspace]
repo = "${forgeUrl}/app.git"
[sidecar]
adapter = "generic"
`,
    'repo-unknown': workspace(`repo = "${forgeUrl}/nothing-here.git"`),
    'repo-bad-ref': workspace(`repo = "${forgeUrl}/app.git"\nref = "no-such-branch"`),
  };
}

describe('sessions end to end: POST /v1/sessions → sandbox → sidecar → agent (every service its own process)', () => {
  let stack: E2eStack;
  let templatesDir: string;
  let token: string;
  /** A forge on loopback whose token only the session service is given (SVC_GIT_CREDENTIALS). */
  let forge: GitServer;
  /** GitHub's API as the forge of the git server's host: pull requests. */
  let github: GitHubApiStandIn;
  let firstCommit: string;
  let shopFirstCommit: string;

  beforeAll(async () => {
    await rm(PWNED, { force: true });
    forge = await startGitServer();
    firstCommit = forge.createRepository('app', { 'README.md': 'the app\n', 'src/main.txt': 'main\n' });
    shopFirstCommit = forge.createRepository('acme/shop', { 'README.md': 'the shop\n', 'src/main.txt': 'main\n' });
    github = await startGitHubApi(forge.token);
    templatesDir = await mkdtemp(path.join(tmpdir(), 'svc-e2e-templates-'));
    const templates = { ...TEMPLATES, ...repositoryTemplates(forge.url) };
    for (const [name, toml] of Object.entries(templates)) await writeFile(path.join(templatesDir, `${name}.toml`), toml);
    stack = await startStack({
      ingestReplicas: 1,
      sessionEnv: {
        SVC_TEMPLATES_DIR: templatesDir,
        SVC_SANDBOX_KILL_GRACE_MS: '3000',
        SVC_GIT_CREDENTIALS: JSON.stringify({ [new URL(forge.url).host]: forge.token }),
        SVC_GIT_FORGES: JSON.stringify({ [new URL(forge.url).host]: { type: 'github', api_url: github.url } }),
      },
      // The git proxy adds it to the agents' fetches and pushes.
      gatewayEnv: { SVC_GIT_CREDENTIALS: JSON.stringify({ [new URL(forge.url).host]: forge.token }) },
    });
    token = await stack.userToken('e2e-user');
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
    await forge?.stop();
    await github?.stop();
    if (templatesDir) await rm(templatesDir, { recursive: true, force: true });
  });

  const api = async (method: string, url: string, body?: unknown, bearer = token) => {
    const response = await fetch(`${stack.gatewayUrl}${url}`, {
      method,
      headers: { authorization: `Bearer ${bearer}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  const createSession = async (body: Record<string, unknown>) => {
    const created = await api('POST', '/v1/sessions', body);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body as unknown as Session;
  };
  const waitForStatus = (session: Session, status: Session['status'], timeoutMs = 30_000) =>
    waitFor(
      `session ${session.id} ${status}`,
      async () => {
        const current = (await api('GET', `/v1/sessions/${session.id}`)).body as unknown as Session;
        if (current.status === 'failed' && status !== 'failed') throw new Error(`the session failed: ${JSON.stringify(current.failure)}\n${stack.outputs()}`);
        return current.status === status ? current : undefined;
      },
      timeoutMs,
      100,
    );
  const eventsOf = async (workerId: string) =>
    ((await api('GET', `/v1/workers/${workerId}/sdk-events?limit=1000`)).body as unknown as ListResponseOf<StoredEvent>).items;
  const systemLines = (events: StoredEvent[]) => events.filter((e) => e.type === 'system').map((e) => (e.data as EventData<'system'>).message);

  it('demo: running → events stream → the prompt approved through the API → the tool really ran → idle, waiting for a message → deleted: stopped', async () => {
    const session = await createSession({ template: 'demo', prompt: 'Say hello.' });
    expect(session).toMatchObject({ status: 'pending', template: 'demo', owner: 'e2e-user' });
    const viewer = new StreamViewer('viewer', stack.gatewayUrl, token);
    await viewer.watch([session.worker_id]);
    await waitForStatus(session, 'running');
    const request = await waitFor(
      'the permission request',
      () => viewer.received.byWorker.get(session.worker_id)?.find((e) => e.type === 'control_request'),
      30_000,
    );
    const data = request.data as EventData<'control_request'>;
    expect(data.tool_name).toBe('Write');
    const open = await api('GET', `/v1/workers/${session.worker_id}/control/requests?state=open`);
    expect((open.body['items'] as StoredEvent[]).map((e) => e.id)).toEqual([request.id]);
    // "Always": the demo then asks the same once more, and the sidecar's engine answers by the rule.
    const decided = await api('POST', `/v1/workers/${session.worker_id}/control`, { request_id: data.request_id, decision: 'allow', scope: 'always' });
    expect(decided.status).toBe(201);
    // A conversation (the built-in demo's mode): after its turn the agent waits for a message.
    await waitFor('idle', async () => (await api('GET', `/v1/workers/${session.worker_id}`)).body['activity'] === 'idle', 30_000, 100);
    const events = await waitFor('the idle activity on the stream', () => {
      const seen = viewer.received.byWorker.get(session.worker_id) ?? [];
      return seen.some((e) => activityOf(e) === 'idle') ? seen : undefined;
    });
    expect(((await api('GET', `/v1/sessions/${session.id}`)).body as unknown as Session).status).toBe('running');
    expect(viewer.received.violations).toEqual([]);
    const types = events.map((e) => e.type);
    for (const type of ['assistant', 'tool_use', 'tool_result', 'control_request', 'control_response', 'result', 'progress']) expect(types).toContain(type);
    for (const toolUseId of ['toolu_demo_2', 'toolu_demo_3']) {
      const written = events.find((e) => e.type === 'tool_result' && (e.data as EventData<'tool_result'>).tool_use_id === toolUseId)!;
      expect(written.data).toMatchObject({ is_error: false });
    }
    const decisions = events.filter((e) => e.type === 'control_response').map((e) => e.data as EventData<'control_response'>);
    expect(decisions.map((d) => [d.decided_by, d.decision, d.scope])).toEqual([
      ['e2e-user', 'allow', 'always'],
      ['policy', 'allow', undefined],
    ]);
    expect(decisions[1]!.message).toBe("allowed by e2e-user's rule Write");
    expect(await readFile(path.join(stack.sandboxesDir, session.worker_id, 'root/workspace/hello.txt'), 'utf8')).toBe(
      'hello from the svc demo agent\nhello again\n',
    );
    // The sidecar read its config and token at the spec's paths, inside the sandbox.
    const started = events.find((e) => e.type === 'system' && (e.data as EventData<'system'>).subtype === 'agent_start')!;
    expect((started.data as EventData<'system'>).details).toMatchObject({
      config_file: '/etc/svc/sidecar.json',
      token_file: '/var/run/svc/token',
      adapter: 'claude-code',
    });
    expect((await api('DELETE', `/v1/sessions/${session.id}`)).body).toMatchObject({ status: 'stopped' });
    await viewer.disconnect();
  });

  it("a conversation: each person's message reaches the agent once and in order — a line-reading agent's stdin (and an interrupt its SIGINT), the demo agent's next turn — and the worker stays up between turns", async () => {
    const send = (workerId: string, body: Record<string, unknown>) => api('POST', `/v1/workers/${workerId}/messages`, body);
    const reader = await createSession({ template: 'line-reader' });
    await waitForStatus(reader, 'running');
    for (const [text, id] of [
      ['first', 'c-1'],
      ['second', 'c-2'],
      ['first', 'c-1'],
    ] as const)
      expect((await send(reader.worker_id, { text, client_message_id: id })).status).toBe(202);
    const echoed = async () => systemLines(await eventsOf(reader.worker_id)).filter((line) => line.startsWith('got: ') || line === 'interrupted');
    await waitFor('both messages echoed by the agent', async () => (await echoed()).length >= 2, 30_000, 100);
    expect(await echoed()).toEqual(['got: first', 'got: second']);
    // An interrupt reaches a generic agent as SIGINT: it ends what it does, not the worker.
    expect((await api('POST', `/v1/workers/${reader.worker_id}/interrupt`)).status).toBe(202);
    await waitFor('the agent interrupted', async () => (await echoed()).includes('interrupted'), 30_000, 100);
    expect((await send(reader.worker_id, { text: 'third' })).status).toBe(202);
    await waitFor('the message after the interrupt echoed', async () => (await echoed()).length === 4, 30_000, 100);
    expect(await echoed()).toEqual(['got: first', 'got: second', 'interrupted', 'got: third']);

    const demo = await createSession({ template: 'demo-talk' });
    const results = async () => (await eventsOf(demo.worker_id)).filter((e) => e.type === 'result');
    await waitFor('the first turn ended', async () => (await results()).length === 1, 30_000, 100);
    expect((await send(demo.worker_id, { text: 'what now?' })).status).toBe(202);
    await waitFor('the second turn ended', async () => (await results()).length === 2, 30_000, 100);
    const events = await eventsOf(demo.worker_id);
    const asked = events.find((e) => e.type === 'system' && (e.data as EventData<'system'>).subtype === 'person_message')!;
    const answered = events.filter((e) => e.type === 'result')[1]!;
    expect(asked).toMatchObject({ source: 'user:api:e2e-user', data: { message: 'what now?' } });
    expect(BigInt(asked.id)).toBeLessThan(BigInt(answered.id));
    expect((answered.data as EventData<'result'>).text).toContain('You said: "what now?"');
    for (const session of [reader, demo]) {
      expect(((await api('GET', `/v1/sessions/${session.id}`)).body as unknown as Session).status).toBe('running');
      expect((await api('DELETE', `/v1/sessions/${session.id}`)).status).toBe(200);
    }
  });

  it("idle and resumed: the worker shows its agent's activity; idle past idle_timeout_s the agent stops and the worker is suspended; a message starts it again on its own conversation, the workspace as it was", async () => {
    const session = await createSession({ template: 'demo-resume' });
    const workerNow = async () => (await api('GET', `/v1/workers/${session.worker_id}`)).body as unknown as Worker;
    const activities = (events: StoredEvent[]) => events.map((e) => activityOf(e)).filter((a) => a !== undefined);
    await waitFor('the worker suspended', async () => (await workerNow()).activity === 'suspended', 30_000, 100);
    const before = await eventsOf(session.worker_id);
    expect(activities(before)).toEqual(['working', 'idle', 'suspended']);
    const exit = before.find((e) => agentExitCodeOf(e) !== undefined)!;
    expect(exit.data).toMatchObject({ details: { code: 0, resumable: true, reason: 'idle for 2 s' } });
    expect(((await api('GET', `/v1/sessions/${session.id}`)).body as unknown as Session).status).toBe('running');
    const conversation = (before.find((e) => e.type === 'system' && (e.data as EventData<'system'>).subtype === 'init')!.data as EventData<'system'>).details![
      'session_id'
    ] as string;

    expect((await api('POST', `/v1/workers/${session.worker_id}/messages`, { text: 'are you back?' })).status).toBe(202);
    const results = async () => (await eventsOf(session.worker_id)).filter((e) => e.type === 'result');
    await waitFor('the resumed turn ended', async () => (await results()).length === 2, 30_000, 100);
    const after = await eventsOf(session.worker_id);
    const restarted = after.filter((e) => e.type === 'system' && (e.data as EventData<'system'>).subtype === 'agent_start');
    expect(restarted.map((e) => (e.data as EventData<'system'>).details?.['resumed'] ?? false)).toEqual([false, true]);
    expect(((await results())[1]!.data as EventData<'result'>).text).toBe(
      `We pick up our conversation ${conversation} again. You said: "are you back?". I am a script, so that is all I can do with it; turn 2 ends here.`,
    );
    await waitFor('idle again', async () => (await workerNow()).activity === 'idle', 10_000, 100);
    expect(activities(await eventsOf(session.worker_id))).toEqual(['working', 'idle', 'suspended', 'working', 'idle']);
    // The file the first run wrote is still in the workspace.
    expect(await readFile(path.join(stack.sandboxesDir, session.worker_id, 'root/workspace/hello.txt'), 'utf8')).toContain('hello from the svc demo agent');
    expect((await api('DELETE', `/v1/sessions/${session.id}`)).status).toBe(200);
  });

  it('the sidecar killed (SIGKILL) while idle: its supervisor starts it again, it starts suspended, and a message resumes the conversation, the workspace as it was', async () => {
    const session = await createSession({ template: 'demo-talk' });
    const workerNow = async () => (await api('GET', `/v1/workers/${session.worker_id}`)).body as unknown as Worker;
    await waitFor('idle', async () => (await workerNow()).activity === 'idle', 30_000, 100);
    const killed = (await sidecarPidOf(stack.sandboxesDir, session.worker_id))!;
    expect(killed).toBeGreaterThan(0);
    process.kill(killed, 'SIGKILL');
    await waitFor('suspended by the sidecar started again', async () => (await workerNow()).activity === 'suspended', 30_000, 100);
    const again = await sidecarPidOf(stack.sandboxesDir, session.worker_id);
    expect(again).toBeDefined();
    expect(again).not.toBe(killed);
    expect((await api('POST', `/v1/workers/${session.worker_id}/messages`, { text: 'still there?' })).status).toBe(202);
    const results = async () => (await eventsOf(session.worker_id)).filter((e) => e.type === 'result');
    await waitFor('the resumed turn ended', async () => (await results()).length === 2, 30_000, 100);
    expect(((await results())[1]!.data as EventData<'result'>).text).toContain('You said: "still there?"');
    const starts = (await eventsOf(session.worker_id)).filter((e) => e.type === 'system' && (e.data as EventData<'system'>).subtype === 'agent_start');
    expect(starts.map((e) => (e.data as EventData<'system'>).details?.['resumed'] ?? false)).toEqual([false, true]);
    expect(((await api('GET', `/v1/sessions/${session.id}`)).body as unknown as Session).status).toBe('running');
    expect(await readFile(path.join(stack.sandboxesDir, session.worker_id, 'root/workspace/hello.txt'), 'utf8')).toContain('hello from the svc demo agent');
    expect((await api('DELETE', `/v1/sessions/${session.id}`)).status).toBe(200);
  });

  it('suspended past keep_sandbox_s: the session completes, its sandbox goes, and a message is 409 worker_ended saying why', async () => {
    const session = await createSession({ template: 'demo-brief' });
    await waitForStatus(session, 'completed', 30_000);
    // Completed first, then destroyed.
    await waitFor('the sandbox destroyed', async () => !existsSync(path.join(stack.sandboxesDir, session.worker_id, 'root')), 30_000, 100);
    const refused = await api('POST', `/v1/workers/${session.worker_id}/messages`, { text: 'still there?' });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ code: 'worker_ended' });
    expect(refused.body['message']).toContain('suspended longer than its keep_sandbox_s, 1 s: its sandbox is gone');
  });

  it("[workspace]: the repository cloned into /workspace with the control plane's token, on its work branch; the token in no file, environment or event of the sandbox", async () => {
    const session = await createSession({ template: 'repo-work' });
    await waitForStatus(session, 'running');
    // Its last line before it sleeps is the remote's address, whatever it holds.
    const lines = await waitFor('the agent shows its workspace', async () => {
      const shown = systemLines(await eventsOf(session.worker_id));
      return shown.some((line) => line.endsWith('/app.git')) ? shown : undefined;
    });
    expect(lines).toContain('the app');
    expect(lines).toContain(`## svc/${session.id}`);
    // The remote is named without a credential.
    expect(lines).toContain(`${forge.url}/app.git`);
    const cloned = (await eventsOf(session.worker_id)).find(
      (e) =>
        e.type === 'system' &&
        (e.data as EventData<'system'>).subtype === 'spawn_step' &&
        (e.data as EventData<'system'>).details?.['step'] === 'clone_repository',
    );
    expect(cloned?.data).toMatchObject({ details: { status: 'done', base_commit: firstCommit, branch: `svc/${session.id}` } });
    // Nowhere in the sandbox: not its files (.git/config included), not its processes' environments, not the history.
    const root = path.join(stack.sandboxesDir, session.worker_id);
    const found = spawnSync('grep', ['-rl', '--binary-files=text', forge.token, root], { encoding: 'utf8' });
    expect(found.stdout).toBe('');
    const environments = await sandboxEnvironments(stack.sandboxesDir, session.worker_id);
    expect(environments.length).toBeGreaterThan(1);
    for (const environment of environments) expect(environment).not.toContain(forge.token);
    expect(JSON.stringify(await eventsOf(session.worker_id))).not.toContain(forge.token);
    expect(await readFile(path.join(root, 'root/workspace/.git/config'), 'utf8')).not.toContain(forge.token);
    // Asked for now (the agent is mid-turn): the sidecar reports at once — nothing changed yet.
    expect((await api('GET', `/v1/workers/${session.worker_id}/changes`)).body).toMatchObject({ code: 'changes_not_found' });
    expect((await api('POST', `/v1/workers/${session.worker_id}/changes/refresh`)).status).toBe(202);
    const reported = await waitFor('the changes reported on demand', async () => {
      const answer = await api('GET', `/v1/workers/${session.worker_id}/changes`);
      return answer.status === 200 ? answer.body : undefined;
    });
    expect(reported).toMatchObject({ base_commit: firstCommit, head_commit: firstCommit, files: [], truncated: false });
    expect((await api('DELETE', `/v1/sessions/${session.id}`)).status).toBe(200);
    expect((await api('POST', `/v1/workers/${session.worker_id}/changes/refresh`)).body).toMatchObject({ code: 'worker_ended' });
  });

  it("[workspace]: the agent's own pushes go through the git proxy — its branch by the template's rule, main refused by a person — and its changes are reported, stored and outlive the session", async () => {
    const session = await createSession({ template: 'repo-push' });
    const asked = await waitFor(
      'the push to main asked',
      async () =>
        (await eventsOf(session.worker_id)).find(
          (e) =>
            e.type === 'control_request' &&
            (e.data as EventData<'control_request'>).tool_name === 'git_push' &&
            (e.data as EventData<'control_request'>).input['ref'] === 'refs/heads/main',
        ),
      60_000,
    );
    const request = asked.data as EventData<'control_request'>;
    // Its commit went with the branch, allowed first: main's push carries none, and says so.
    expect(request.input).toMatchObject({ commits: [], paths: [], already_on_remote: true });
    const branchPush = (await eventsOf(session.worker_id)).find(
      (e) => e.type === 'control_request' && (e.data as EventData<'control_request'>).input['ref'] === `refs/heads/svc/${session.id}`,
    );
    expect((branchPush?.data as EventData<'control_request'>).input).toMatchObject({
      paths: ['README.md', 'src/new.txt'],
      commits: [expect.objectContaining({ subject: 'the agent edits the README', author: 'Agent <agent@example.com>' })],
    });
    expect(
      (await api('POST', `/v1/workers/${session.worker_id}/control`, { request_id: request.request_id, decision: 'deny', message: 'main is for people' }))
        .status,
    ).toBe(201);
    await waitForStatus(session, 'completed', 60_000);
    const lines = systemLines(await eventsOf(session.worker_id)).join('\n');
    expect(lines).toContain('main is for people');
    expect(lines).toContain('the main push was refused');
    expect(lines).not.toContain('the branch push failed');
    // The branch landed with the agent's commit; main did not move.
    const bare = path.join(forge.root, 'acme/shop.git');
    const git = (...args: string[]) => spawnSync('git', ['--git-dir', bare, ...args], { encoding: 'utf8' }).stdout;
    const agentCommit = git('rev-parse', `refs/heads/svc/${session.id}`).trim();
    expect(agentCommit).toMatch(/^[0-9a-f]{40}$/);
    expect(git('rev-parse', 'refs/heads/main').trim()).toBe(shopFirstCommit);
    // The changes as reported when the agent was done: its commit and what it left uncommitted.
    const changes = await waitFor('the changes reported', async () => {
      const answer = await api('GET', `/v1/workers/${session.worker_id}/changes`);
      return answer.status === 200 ? answer.body : undefined;
    });
    expect(changes).toMatchObject({
      base_commit: shopFirstCommit,
      head_commit: agentCommit,
      branch: `svc/${session.id}`,
      additions: 3,
      deletions: 0,
      truncated: false,
    });
    expect(changes['files']).toEqual([
      { path: 'README.md', status: 'modified', additions: 1, deletions: 0 },
      { path: 'notes.txt', status: 'added', additions: 1, deletions: 0 },
      { path: 'src/new.txt', status: 'added', additions: 1, deletions: 0 },
    ]);
    // A file of the workspace, while the sandbox lives; none outside it.
    const file = async (name: string) =>
      fetch(`${stack.gatewayUrl}/v1/workers/${session.worker_id}/files/${name}`, { headers: { authorization: `Bearer ${token}` } });
    expect(await (await file('notes.txt')).text()).toBe('left for a person\n');
    expect((await file('..%2Fetc%2Fpasswd')).status).toBe(400);
    expect((await file('nothing-here.txt')).status).toBe(404);
    // A person pushes: what was left is committed in their name, the branch moves on the forge.
    const pushed = await api('POST', `/v1/workers/${session.worker_id}/changes/push`, { message: 'what the agent left' });
    expect(pushed.status, JSON.stringify(pushed.body)).toBe(200);
    expect(pushed.body).toMatchObject({ branch: `svc/${session.id}`, by: 'e2e-user', remote: `${forge.url}/acme/shop.git` });
    const head = String(pushed.body['commit']);
    expect(git('rev-parse', `refs/heads/svc/${session.id}`).trim()).toBe(head);
    expect(git('log', '-1', '--format=%an|%s|%P', head).trim()).toBe(`e2e-user|what the agent left|${agentCommit}`);
    // The stored diff is git's diff of the pushed branch against the base, computed here.
    const diff = async (query = '') =>
      (await fetch(`${stack.gatewayUrl}/v1/workers/${session.worker_id}/changes/diff${query}`, { headers: { authorization: `Bearer ${token}` } })).text();
    const expected = git('diff', shopFirstCommit, head);
    expect(await diff()).toBe(expected);
    expect(await diff('?path=src/new.txt')).toBe(git('diff', shopFirstCommit, head, '--', 'src/new.txt'));
    expect((await api('GET', `/v1/workers/${session.worker_id}/changes/diff?path=../etc/passwd`)).status).toBe(400);
    // A pull request through the forge's API: the pushed branch onto the default one; its URL on the session.
    const opened = await api('POST', `/v1/workers/${session.worker_id}/changes/pull-request`, { title: "The agent's work", body: 'Reviewed in svc.' });
    expect(opened.status, JSON.stringify(opened.body)).toBe(200);
    expect(github.pulls).toEqual([
      { owner: 'acme', repo: 'shop', title: "The agent's work", head: `svc/${session.id}`, base: 'main', body: 'Reviewed in svc.' },
    ]);
    expect((await api('GET', `/v1/sessions/${session.id}`)).body['workspace']).toEqual({
      repo: `${forge.url}/acme/shop.git`,
      branch: `svc/${session.id}`,
      files_changed: 3,
      additions: 3,
      deletions: 0,
      pull_request_url: opened.body['url'],
    });
    expect((await api('POST', `/v1/workers/${session.worker_id}/changes/pull-request`, { title: 'again' })).body).toMatchObject({ code: 'conflict' });
    // The history says it all, and holds no part of the forge's token.
    const events = await eventsOf(session.worker_id);
    for (const subtype of ['workspace_changes', 'git_push', 'workspace_pushed'])
      expect(
        events.some((e) => e.type === 'system' && (e.data as EventData<'system'>).subtype === subtype),
        subtype,
      ).toBe(true);
    expect(JSON.stringify(events)).not.toContain(forge.token);
    // The session deleted, its sandbox gone: the changes stay; its files are gone.
    expect((await api('DELETE', `/v1/sessions/${session.id}`)).status).toBe(200);
    expect((await api('GET', `/v1/workers/${session.worker_id}/changes`)).body).toMatchObject({ head_commit: agentCommit, pushed: { commit: head } });
    expect(await diff()).toBe(expected);
    expect((await file('notes.txt')).status).toBe(410);
    expect((await api('POST', `/v1/workers/${session.worker_id}/changes/push`, {})).body).toMatchObject({ code: 'sandbox_gone' });
    // Another person sees none of it.
    expect((await api('GET', `/v1/workers/${session.worker_id}/changes`, undefined, await stack.userToken('someone-else'))).status).toBe(404);
  }, 120_000);

  it('[workspace] a 20 MB diff: stored cut at a file boundary, the fact said; the services and the sidecar stay within their usual memory', async () => {
    const peakRss = async (pid: number) => Number(/VmHWM:\s+(\d+) kB/.exec(await readFile(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
    const services = stack.processes().filter((service) => service.service === 'gateway' || service.service === 'session');
    const before = await Promise.all(services.map((service) => peakRss(service.pid)));
    const session = await createSession({ template: 'repo-big' });
    // The sidecar reports when the agent exits: its peak memory is read until it is gone.
    await waitFor('the file written', async () => systemLines(await eventsOf(session.worker_id)).includes('written'), 30_000, 100);
    const sidecar = (await sidecarPidOf(stack.sandboxesDir, session.worker_id))!;
    let sidecarPeak = 0;
    await waitFor(
      'the sidecar done',
      async () => {
        sidecarPeak = Math.max(sidecarPeak, await peakRss(sidecar).catch(() => 0));
        return !existsSync(`/proc/${sidecar}`);
      },
      60_000,
      50,
    );
    const changes = await waitFor('the changes reported', async () => {
      const answer = await api('GET', `/v1/workers/${session.worker_id}/changes`);
      return answer.status === 200 ? (answer.body as unknown as WorkspaceChanges) : undefined;
    });
    expect(changes).toMatchObject({ truncated: true, files: [{ path: 'big.txt', status: 'added' }] });
    expect(changes.patch_bytes).toBeGreaterThan(20_000_000);
    const diff = await fetch(`${stack.gatewayUrl}/v1/workers/${session.worker_id}/changes/diff`, { headers: { authorization: `Bearer ${token}` } });
    expect(diff.headers.get('x-svc-patch-truncated')).toBe('true');
    // One file bigger than the bound: nothing of it fits, and the fact is said.
    expect((await diff.text()).length).toBeLessThanOrEqual(1024 * 1024);
    const reported = (await eventsOf(session.worker_id)).find((e) => e.type === 'system' && (e.data as EventData<'system'>).subtype === 'workspace_changes');
    expect((reported?.data as EventData<'system'>).details).toMatchObject({ truncated: true });
    // The whole diff, while the sandbox lives: read there now, streamed through.
    const whole = await fetch(`${stack.gatewayUrl}/v1/workers/${session.worker_id}/changes/diff?full=true`, { headers: { authorization: `Bearer ${token}` } });
    expect(whole.status).toBe(200);
    expect(whole.headers.get('x-svc-patch-truncated')).toBe('false');
    const wholeText = await whole.text();
    expect(Buffer.byteLength(wholeText)).toBe(changes.patch_bytes);
    expect(wholeText.startsWith('diff --git a/big.txt b/big.txt\n')).toBe(true);
    const after = await Promise.all(services.map((service) => peakRss(service.pid)));
    services.forEach((service, i) => expect(after[i]! - before[i]!, `${service.service}'s peak RSS grew`).toBeLessThan(48 * 1024 * 1024));
    expect((await api('DELETE', `/v1/sessions/${session.id}`)).status).toBe(200);
    expect((await api('GET', `/v1/workers/${session.worker_id}/changes/diff?full=true`)).body).toMatchObject({ code: 'sandbox_gone' });
    // The sidecar's budget (docs/benchmarks.md#sidecar) with the report's bound patch in it.
    expect(sidecarPeak).toBeGreaterThan(0);
    expect(sidecarPeak).toBeLessThan(160 * 1024 * 1024);
    console.log(
      `a 20 MB diff: sidecar peak RSS ${(sidecarPeak / 2 ** 20).toFixed(0)} MiB; ${services.map((service, i) => `${service.service} +${((after[i]! - before[i]!) / 2 ** 20).toFixed(1)} MiB`).join(', ')}`,
    );
  }, 90_000);

  it('[workspace] that cannot be cloned — an unknown repository, a ref that does not exist: the session fails at clone_repository saying why', async () => {
    for (const [template, why] of [
      ['repo-unknown', /git fetch of .*nothing-here\.git failed/],
      ['repo-bad-ref', /no-such-branch/],
    ] as const) {
      const session = await createSession({ template });
      const failed = await waitForStatus(session, 'failed');
      expect(failed.failure, template).toMatchObject({ step: 'clone_repository', reason: expect.stringMatching(why) });
      expect(failed.failure!.reason).not.toContain(forge.token);
    }
  });

  it('inside the local sandbox the spec paths are where the spec says, seen by the agent under the sidecar', async () => {
    const session = await createSession({ template: 'inside' });
    await waitForStatus(session, 'completed');
    const lines = systemLines(await eventsOf(session.worker_id)).join('\n');
    for (const file of ['/etc/svc/sidecar.json', '/var/run/svc/token', '/usr/local/bin/svc-sidecar']) expect(lines).toContain(file);
    expect(lines).toMatch(/-rw------- .* \/var\/run\/svc\/token/);
    expect(lines).toMatch(/-rwxr-xr-x .* \/usr\/local\/bin\/svc-sidecar/);
  });

  it('a template whose values hold $(…), backticks and ";" executes none of them: they arrive as text', async () => {
    const session = await createSession({ template: 'injection', prompt: INJECTION, overrides: { env: { ALSO: INJECTION } } });
    await waitForStatus(session, 'completed');
    const lines = systemLines(await eventsOf(session.worker_id));
    expect(lines).toContain(`${INJECTION} ; touch ${PWNED}`);
    expect(existsSync(PWNED)).toBe(false);
    const root = path.join(stack.sandboxesDir, session.worker_id, 'root');
    expect(existsSync(path.join(root, PWNED))).toBe(false);
    expect(await readFile(path.join(root, 'workspace/notes.txt'), 'utf8')).toBe(INJECTION);
  });

  it('DELETE mid-run: stopped, the sandbox gone, the token refused; deleting again is harmless', async () => {
    const session = await createSession({ template: 'demo' });
    await waitForStatus(session, 'running');
    const sandbox = path.join(stack.sandboxesDir, session.worker_id);
    const workerToken = (await readFile(path.join(sandbox, 'root/var/run/svc/token'), 'utf8')).trim();
    const deleted = await api('DELETE', `/v1/sessions/${session.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ id: session.id, status: 'stopped' });
    expect(existsSync(sandbox)).toBe(false);
    await waitFor(
      'the token refused',
      async () => (await api('GET', `/v1/workers/${session.worker_id}/control/pending`, undefined, workerToken)).status === 401,
    );
    expect((await api('GET', `/v1/sessions/${session.id}`)).body).toMatchObject({ status: 'stopped' });
    expect((await api('DELETE', `/v1/sessions/${session.id}`)).body).toMatchObject({ status: 'stopped' });
  });

  it('GET /v1/templates lists what a start form offers: the built-in and configured templates, a broken one with its problem', async () => {
    const listed = await api('GET', '/v1/templates');
    expect(listed.status).toBe(200);
    const items = listed.body['items'] as Array<{ name: string; description: string; problem?: string; adapter?: string }>;
    expect(items.map((t) => t.name)).toEqual(expect.arrayContaining(['demo', 'claude', 'codex', 'inside', 'broken']));
    expect(items.find((t) => t.name === 'demo')).toMatchObject({ adapter: 'claude-code', prompt: 'Show me what you can do.' });
    expect(items.find((t) => t.name === 'broken')!.problem).toMatch(/broken\.toml: \/sidecar\/auto_approve/);
    expect((await api('GET', '/v1/templates', undefined, 'not-a-token')).status).toBe(401);
  });

  it('an invalid template is 400 naming the file and key; an unknown one 404; a failing step fails the session and cleans up', async () => {
    const broken = await api('POST', '/v1/sessions', { template: 'broken' });
    expect(broken.status).toBe(400);
    expect(broken.body['code']).toBe('invalid_template');
    expect(broken.body['message']).toMatch(/broken\.toml: \/sidecar\/auto_approve/);
    expect((await api('POST', '/v1/sessions', { template: 'nope' })).body['code']).toBe('template_not_found');
    const session = await createSession({ template: 'bad-step' });
    const failed = await waitForStatus(session, 'failed');
    expect(failed.failure).toMatchObject({ step: 'env_and_files' });
    expect(existsSync(path.join(stack.sandboxesDir, session.worker_id))).toBe(false);
    // Another user sees none of it.
    const other = await stack.userToken('someone-else');
    expect((await api('GET', `/v1/sessions/${session.id}`, undefined, other)).status).toBe(404);
  });

  it("GET /v1/sessions/{id}/logs follows the sandbox logs (the sidecar's and the agent's) over a WebSocket", async () => {
    const session = await createSession({ template: 'noisy' });
    await waitForStatus(session, 'completed');
    const socket = new WebSocket(`${stack.gatewayUrl.replace(/^http/, 'ws')}/v1/sessions/${session.id}/logs?tail=100`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const frames: SessionLogMessageType[] = [];
    const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
    socket.on('message', (data) => frames.push(JSON.parse(String(data)) as SessionLogMessageType));
    expect(await closed).toBe(1000);
    const lines = frames.flatMap((f) => (f.kind === 'lines' ? f.lines : []));
    expect(lines.some((line) => line.startsWith('svc-sidecar: starting'))).toBe(true);
    expect(lines).toContain('svc-sidecar: agent stderr: to-stderr');
    expect(frames.at(-1)).toEqual({ kind: 'end', reason: 'the sandbox has ended' });
  });
});
