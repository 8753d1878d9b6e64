import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PullRequestRecord, PushRecord, WorkspaceChanges } from '@svc/protocol';
import { startGitHubApi, startGitServer, waitFor, type GitHubApiStandIn, type GitServer } from '@svc/test-support';
import { addFilePatch, startMockAnthropic, startMockOpenAI, type MockAnthropic, type MockOpenAI } from '@svc/test-support/stand-ins';
import { claudeBinary, CLAUDE_CODE_VERSIONS, codexBinary, codexTemplate, CODEX_VERSION, sandboxEnvForAll } from '@svc/test-support/real-agents';
import { controlClient } from '../sidecar-process.js';
import { startStack, type E2eStack } from '../stack.js';

// The newest release svc supports (issue 37 names it).
const CLAUDE_VERSION = CLAUDE_CODE_VERSIONS.at(-1)!;
/** What Claude Code is scripted to run: edit the README and commit it, in the sandbox's workspace. */
const CLAUDE_EDITS =
  "printf 'edited by Claude\\n' >> README.md && git add README.md && git -c user.name=Claude -c user.email=claude@example.com commit -q -m 'Claude edits the README'";

/**
 * Issue 37's acceptance with the real agents: a session on a repository served by git's own
 * http-backend on loopback, whose credential only the control plane holds; the agent (real Claude
 * Code, real Codex) changes it, svc reports the changes after its turn, a person pushes the work
 * branch and opens a pull request on a GitHub API stand-in. Only the models, the forge and its API
 * are stand-ins.
 */
describe(`the workspace with real agents (Claude Code ${CLAUDE_VERSION}, Codex ${CODEX_VERSION})`, () => {
  let stack: E2eStack;
  let forge: GitServer;
  let github: GitHubApiStandIn;
  let anthropic: MockAnthropic;
  let openai: MockOpenAI;
  let templates: string;
  let token: string;
  const bases: Record<string, string> = {};

  beforeAll(async () => {
    forge = await startGitServer();
    github = await startGitHubApi(forge.token);
    for (const name of ['claude-shop', 'codex-shop'])
      bases[name] = forge.createRepository(`acme/${name}`, { 'README.md': 'the shop\n', 'src/main.txt': 'main\n' });
    anthropic = await startMockAnthropic([
      { text: 'I will edit the README and commit it.', tool: { name: 'Bash', input: { command: CLAUDE_EDITS, description: 'Edit and commit' } } },
      { text: 'Done.' },
    ]);
    openai = await startMockOpenAI([{ text: 'I will add the notes.', patch: addFilePatch('NOTES.md', ['# Notes', 'written by Codex']) }, { text: 'Done.' }]);
    templates = await mkdtemp(path.join(tmpdir(), 'svc-e2e-workspace-agents-'));
    const builtInClaude = await readFile(fileURLToPath(new URL('../../../../services/session/templates/claude.toml', import.meta.url)), 'utf8');
    await writeFile(path.join(templates, 'claude-repo.toml'), `${builtInClaude}\n[workspace]\nrepo = "${forge.url}/acme/claude-shop.git"\n`);
    await writeFile(path.join(templates, 'codex-repo.toml'), codexTemplate(`[workspace]\nrepo = "${forge.url}/acme/codex-shop.git"`));
    const host = new URL(forge.url).host;
    const credentials = JSON.stringify({ [host]: forge.token });
    stack = await startStack({
      ingestReplicas: 1,
      sessionEnv: {
        SVC_TEMPLATES_DIR: templates,
        ...sandboxEnvForAll([claudeBinary(CLAUDE_VERSION), codexBinary()]),
        SVC_GIT_CREDENTIALS: credentials,
        SVC_GIT_FORGES: JSON.stringify({ [host]: { type: 'github', api_url: github.url } }),
      },
      gatewayEnv: {
        SVC_GIT_CREDENTIALS: credentials,
        SVC_ANTHROPIC_API_KEY: 'sk-ant-e2e-workspace',
        SVC_ANTHROPIC_UPSTREAM_URL: anthropic.url,
        SVC_OPENAI_API_KEY: 'sk-proj-e2e-workspace',
        SVC_OPENAI_UPSTREAM_URL: new URL(openai.url).origin,
      },
    });
    token = await stack.userToken('e2e-user');
  }, 180_000);
  afterAll(async () => {
    await Promise.all([stack?.stop(), anthropic?.stop(), openai?.stop(), forge?.stop(), github?.stop()]);
    if (templates) await rm(templates, { recursive: true, force: true });
  });

  const api = () => controlClient(stack.gatewayUrl, token);
  const post = async <T>(url: string, body: unknown): Promise<T> => {
    const answer = await fetch(`${stack.gatewayUrl}${url}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (answer.status !== 200) throw new Error(`POST ${url} answered ${answer.status}: ${await answer.text()}`);
    return (await answer.json()) as T;
  };
  const diff = async (workerId: string) =>
    (await fetch(`${stack.gatewayUrl}/v1/workers/${workerId}/changes/diff`, { headers: { authorization: `Bearer ${token}` } })).text();
  const bareGit = (repo: string, ...args: string[]) =>
    spawnSync('git', ['--git-dir', path.join(forge.root, `acme/${repo}.git`), ...args], { encoding: 'utf8' }).stdout;
  /** The changes once a report shows `files` changed. */
  const changesWith = (workerId: string, files: number) =>
    waitFor(
      `a report of ${files} changed file(s)`,
      async () => {
        const changes = await api().get<WorkspaceChanges>(`/v1/workers/${workerId}/changes`);
        return changes.files?.length === files ? changes : undefined;
      },
      60_000,
      200,
    ).catch(async (err: unknown) => {
      const history = (await api().events(workerId)).map((e) => `${e.id} ${e.type} ${JSON.stringify(e.data).slice(0, 300)}`);
      const last = await api().get<unknown>(`/v1/workers/${workerId}/changes`);
      throw new Error(`${String(err)}\nlast report: ${JSON.stringify(last)}\n${history.join('\n')}\n${stack.outputs().slice(-3000)}`);
    });

  /** The push and the pull request, checked against the forge: the stored diff is git's diff of the pushed branch. */
  async function pushAndOpen(repo: string, sessionId: string, workerId: string) {
    const pushed = await post<PushRecord>(`/v1/workers/${workerId}/changes/push`, { message: 'The agent’s work, as reviewed' });
    expect(pushed.branch).toBe(`svc/${sessionId}`);
    expect(bareGit(repo, 'rev-parse', `refs/heads/svc/${sessionId}`).trim()).toBe(pushed.commit);
    expect(await diff(workerId)).toBe(bareGit(repo, 'diff', bases[repo]!, pushed.commit));
    const opened = await post<PullRequestRecord>(`/v1/workers/${workerId}/changes/pull-request`, { title: `Work from ${repo}` });
    expect(github.pulls.at(-1)).toMatchObject({ owner: 'acme', repo, head: `svc/${sessionId}`, base: 'main', title: `Work from ${repo}` });
    expect((await api().get<{ workspace?: { pull_request_url?: string } }>(`/v1/sessions/${sessionId}`)).workspace?.pull_request_url).toBe(opened.url);
    return pushed;
  }

  it('Claude Code edits a file and commits it (its Bash call allowed by a person): the changes are reported after its turn; the push carries its commit; the pull request reaches the forge', async () => {
    const session = await api().createSession({ template: 'claude-repo', prompt: 'Add a line to the README and commit it.' });
    const request = await api().oneOpenRequest(session.worker_id);
    expect(request.data).toMatchObject({ tool_name: 'Bash', input: { command: CLAUDE_EDITS } });
    expect((await api().decide(session.worker_id, { request_id: request.data.request_id, decision: 'allow' })).status).toBe(201);
    const changes = await changesWith(session.worker_id, 1);
    expect(changes).toMatchObject({ base_commit: bases['claude-shop'], files: [{ path: 'README.md', status: 'modified', additions: 1, deletions: 0 }] });
    // Its commit, made in the sandbox, is the head.
    expect(changes.head_commit).not.toBe(bases['claude-shop']);
    const pushed = await pushAndOpen('claude-shop', session.id, session.worker_id);
    // Nothing was left uncommitted: the branch holds Claude's own commit.
    expect(pushed.commit).toBe(changes.head_commit);
    expect(bareGit('claude-shop', 'log', '-1', '--format=%an|%s', pushed.commit).trim()).toBe('Claude|Claude edits the README');
    expect(JSON.stringify(await api().events(session.worker_id))).not.toContain(forge.token);
  }, 180_000);

  it('Codex writes a file with apply_patch (allowed by a person): the changes are reported after its turn; a person’s push commits them; the pull request reaches the forge', async () => {
    const session = await api().createSession({ template: 'codex-repo', prompt: 'Add a NOTES.md file.' });
    const request = await api().oneOpenRequest(session.worker_id);
    expect(request.data).toMatchObject({ tool_name: 'file_change' });
    expect((await api().decide(session.worker_id, { request_id: request.data.request_id, decision: 'allow' })).status).toBe(201);
    const changes = await changesWith(session.worker_id, 1);
    expect(changes).toMatchObject({
      base_commit: bases['codex-shop'],
      head_commit: bases['codex-shop'],
      files: [{ path: 'NOTES.md', status: 'added', additions: 2 }],
    });
    const pushed = await pushAndOpen('codex-shop', session.id, session.worker_id);
    expect(bareGit('codex-shop', 'show', `${pushed.commit}:NOTES.md`)).toBe('# Notes\nwritten by Codex\n');
    expect(bareGit('codex-shop', 'log', '-1', '--format=%an|%s', pushed.commit).trim()).toBe('e2e-user|The agent’s work, as reviewed');
  }, 180_000);
});
