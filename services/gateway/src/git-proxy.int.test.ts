import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GIT_PUSH_TOOL, type GitPushInput, type ListResponseOf, type StoredEvent, type WorkerWorkspace } from '@svc/protocol';
import { startGitServer, waitFor, type GitServer } from '@svc/test-support';
import { startGatewayFixture, type GatewayFixture } from '../test/fixture.js';

/** Runs git (never synchronously: the gateway it talks to is in this process); its exit code and output. */
function git(args: readonly string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('git', args, { cwd, env: { PATH: process.env['PATH'], HOME: cwd, GIT_CONFIG_NOSYSTEM: '1', GIT_TERMINAL_PROMPT: '0' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

describe('the git proxy: /v1/workers/{id}/git — fetches pass with the control plane credential, pushes are decided', () => {
  let gw: GatewayFixture;
  let server: GitServer;
  let alice: string;
  let base: string;
  let scratch: string;
  let workers = 0;

  beforeAll(async () => {
    server = await startGitServer();
    gw = await startGatewayFixture({ gitCredentials: JSON.stringify({ [new URL(server.url).host]: server.token }) }, [], { services: true });
    alice = await gw.userToken('alice');
    await new Promise<void>((resolve) => gw.app.workerListener.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(gw.app.workerListener.address() as AddressInfo).port}`;
    scratch = await mkdtemp(path.join(tmpdir(), 'svc-git-proxy-test-'));
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
    await server?.stop();
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  const asUser = () => ({ authorization: `Bearer ${alice}` });
  const events = async (workerId: string) =>
    (
      (
        await gw.app.inject({ url: `/v1/workers/${workerId}/sdk-events?limit=1000`, headers: { authorization: `Bearer ${alice}` } })
      ).json() as ListResponseOf<StoredEvent>
    ).items;

  /** A worker of alice's on a fresh repository, cloned through the proxy with its token as the sidecar sends it: the clone's directory. */
  async function workerWithClone(rules: Partial<WorkerWorkspace['push_rules']> = {}, autonomous = false) {
    const id = `wrk_git_${++workers}`;
    const repo = `app${workers}`;
    const first = server.createRepository(repo, { 'README.md': 'hello\n' });
    const workspace: WorkerWorkspace = {
      repo: `${server.url}/${repo}.git`,
      branch: `svc/ses_${workers}`,
      push_rules: { auto_approve: [], deny: [], ask: [], ...rules },
      autonomous,
    };
    const token = await gw.createWorker(id, 'alice', 'running', { workspace });
    const dir = path.join(scratch, id);
    const clone = await git(['-c', `http.extraHeader=Authorization: Bearer ${token}`, 'clone', '--quiet', `${base}/v1/workers/${id}/git`, dir], scratch);
    expect(clone.stderr).toBe('');
    expect(clone.code).toBe(0);
    await git(['config', 'http.extraHeader', `Authorization: Bearer ${token}`], dir);
    await writeFile(path.join(dir, 'src.txt'), 'a change\n');
    await git(['add', 'src.txt'], dir);
    await git(['-c', 'user.name=Agent', '-c', 'user.email=agent@example.com', 'commit', '--quiet', '-m', 'the agent changes src.txt'], dir);
    const head = (await git(['rev-parse', 'HEAD'], dir)).stdout.trim();
    return { id, token, dir, repo, first, head, bare: path.join(server.root, `${repo}.git`) };
  }

  const refIn = async (bare: string, ref: string) => (await git(['--git-dir', bare, 'rev-parse', '--verify', '--quiet', ref], scratch)).stdout.trim();
  const pushRequests = async (workerId: string) =>
    (await events(workerId)).filter(
      (event): event is StoredEvent<'control_request'> => event.type === 'control_request' && event.data.tool_name === GIT_PUSH_TOOL,
    );

  it('a push the template allows lands, asked as git_push with its commits and files, the credential added by the gateway only', async () => {
    const agent = await workerWithClone({ auto_approve: ['git_push(refs/heads/svc/*)'] });
    const push = await git(['push', 'origin', 'HEAD:refs/heads/svc/work'], agent.dir);
    expect(push.code, push.stderr).toBe(0);
    expect(await refIn(agent.bare, 'refs/heads/svc/work')).toBe(agent.head);
    const [asked] = await waitFor('the git_push request', async () => {
      const found = await pushRequests(agent.id);
      return found.length > 0 ? found : undefined;
    });
    const input = asked!.data.input as unknown as GitPushInput;
    expect(input).toMatchObject({
      ref: 'refs/heads/svc/work',
      old_commit: '0'.repeat(40),
      new_commit: agent.head,
      remote: `${server.url}/${agent.repo}.git`,
      paths: ['src.txt'],
    });
    expect(input.commits).toEqual([{ sha: agent.head, subject: 'the agent changes src.txt', author: 'Agent <agent@example.com>' }]);
    const decision = await waitFor('its decision', async () => (await events(agent.id)).find((event) => event.type === 'control_response'));
    expect(decision).toMatchObject({ source: 'policy', data: { decision: 'allow', message: "allowed by the template's rule git_push(refs/heads/svc/*)" } });
    // Every request reached the forge with the control plane's token; none of it is in the clone or the history.
    expect(server.requests().every((request) => request.authorized)).toBe(true);
    expect(await readFile(path.join(agent.dir, '.git', 'config'), 'utf8')).not.toContain(server.token);
    expect(JSON.stringify(await events(agent.id))).not.toContain(server.token);
  });

  it('a push to main waits for a person: denied, git prints the reason and the repository is unchanged; allowed, it lands', async () => {
    const agent = await workerWithClone({ auto_approve: ['git_push(refs/heads/svc/*)'] });
    const decide = async (decision: 'allow' | 'deny', already: number) => {
      const [request] = await waitFor('a git_push request to decide', async () => {
        const found = await pushRequests(agent.id);
        return found.length > already ? found.slice(already) : undefined;
      });
      expect((request!.data.input as unknown as GitPushInput).ref).toBe('refs/heads/main');
      const answer = await gw.app.inject({
        method: 'POST',
        url: `/v1/workers/${agent.id}/control`,
        headers: asUser(),
        payload: { request_id: request!.data.request_id, decision, ...(decision === 'deny' ? { message: 'not on main, please' } : {}) },
      });
      expect(answer.statusCode, answer.body).toBe(201);
    };
    const [denied] = await Promise.all([git(['push', 'origin', 'HEAD:main'], agent.dir), decide('deny', 0)]);
    expect(denied.code).not.toBe(0);
    expect(denied.stderr).toContain('[remote rejected] HEAD -> main (svc: not on main, please)');
    expect(await refIn(agent.bare, 'refs/heads/main')).toBe(agent.first);
    const [allowed] = await Promise.all([git(['push', 'origin', 'HEAD:main'], agent.dir), decide('allow', 1)]);
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(await refIn(agent.bare, 'refs/heads/main')).toBe(agent.head);
  });

  it("a template's deny rule refuses at once; an autonomous worker's push nothing denies passes", async () => {
    const refused = await workerWithClone({ deny: ['git_push(refs/heads/main)'] }, true);
    const push = await git(['push', 'origin', 'HEAD:main'], refused.dir);
    expect(push.stderr).toContain("svc: denied by the template's rule git_push(refs/heads/main)");
    expect(await refIn(refused.bare, 'refs/heads/main')).toBe(refused.first);
    const other = await git(['push', 'origin', 'HEAD:refs/heads/feature'], refused.dir);
    expect(other.code, other.stderr).toBe(0);
    expect(await refIn(refused.bare, 'refs/heads/feature')).toBe(refused.head);
  });

  it('only smart HTTP for the worker’s repository: no other path, no worker without one, no other token', async () => {
    const agent = await workerWithClone({}, true);
    const bare = await gw.createWorker('wrk_git_none', 'alice', 'running');
    const asWorker = (token: string) => ({ authorization: `Bearer ${token}` });
    const noRepo = await fetch(`${base}/v1/workers/wrk_git_none/git/info/refs?service=git-upload-pack`, { headers: asWorker(bare) });
    expect(noRepo.status).toBe(404);
    expect(await noRepo.json()).toMatchObject({ code: 'no_repository' });
    const dumb = await fetch(`${base}/v1/workers/${agent.id}/git/HEAD`, { headers: asWorker(agent.token) });
    expect(dumb.status).toBe(404);
    const service = await fetch(`${base}/v1/workers/${agent.id}/git/info/refs?service=git-upload-archive`, { headers: asWorker(agent.token) });
    expect(service.status).toBe(400);
    const stranger = await fetch(`${base}/v1/workers/${agent.id}/git/info/refs?service=git-upload-pack`, { headers: asWorker(bare) });
    expect(stranger.status).toBe(403);
    const garbage = await fetch(`${base}/v1/workers/${agent.id}/git/git-receive-pack`, {
      method: 'POST',
      headers: { ...asWorker(agent.token), 'content-type': 'application/x-git-receive-pack-request' },
      body: 'not a push',
    });
    expect(garbage.status).toBe(400);
    expect(await garbage.json()).toMatchObject({ code: 'invalid_request' });
    // A remote that cannot be reached, or that refuses the control plane's credential: 502, never a 401 git would take as its own.
    const workspace = (repo: string): WorkerWorkspace => ({ repo, branch: 'svc/x', push_rules: { auto_approve: [], deny: [], ask: [] }, autonomous: true });
    const down = await gw.createWorker('wrk_git_down', 'alice', 'running', { workspace: workspace('http://127.0.0.1:1/nothing.git') });
    const unreachable = await fetch(`${base}/v1/workers/wrk_git_down/git/info/refs?service=git-upload-pack`, { headers: asWorker(down) });
    expect(unreachable.status).toBe(502);
    expect(await unreachable.json()).toMatchObject({ code: 'repository_unreachable' });
    const foreign = await gw.createWorker('wrk_git_foreign', 'alice', 'running', {
      workspace: workspace(`${server.url.replace('127.0.0.1', 'localhost')}/${agent.repo}.git`),
    });
    const refused = await fetch(`${base}/v1/workers/wrk_git_foreign/git/info/refs?service=git-upload-pack`, { headers: asWorker(foreign) });
    expect(refused.status).toBe(502);
    expect(await refused.json()).toMatchObject({ code: 'repository_unreachable', message: expect.stringContaining("refused the control plane's credential") });
  });
});
