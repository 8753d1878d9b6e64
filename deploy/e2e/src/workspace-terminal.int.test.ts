import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Session } from '@svc/protocol';
import { startGitServer, waitFor, type GitServer } from '@svc/test-support';
import { startStack, type E2eStack } from './stack.js';
import { SVC, svcIn } from './svc-binary.js';
import { openTerminal, type Terminal } from './tmux.js';

/** An agent that only waits: its sidecar is up, so a person can open a terminal in its sandbox. */
const waitingAgent = (repo: string) => `
[agent]
command = "sh"
args = ["-c", "sleep 120"]
[workspace]
repo = "${repo}"
[sidecar]
adapter = "generic"
`;

describe('svc attach --raw: a shell in the sandbox, in a real terminal (tmux), against the stack', () => {
  let stack: E2eStack;
  let forge: GitServer;
  let stateDir: string;
  let env: Record<string, string>;
  const terminals: Terminal[] = [];

  beforeAll(async () => {
    stateDir = await mkdtemp(path.join(tmpdir(), 'svc-e2e-terminal-'));
    forge = await startGitServer();
    forge.createRepository('app', { 'README.md': 'the app\n', 'src/main.txt': 'main\n' });
    await writeFile(path.join(stateDir, 'repo-shell.toml'), waitingAgent(`${forge.url}/app.git`));
    const credentials = JSON.stringify({ [new URL(forge.url).host]: forge.token });
    stack = await startStack({ ingestReplicas: 1, sessionEnv: { SVC_TEMPLATES_DIR: stateDir, SVC_GIT_CREDENTIALS: credentials } });
    env = { SVC_URL: stack.gatewayUrl, SVC_TOKEN: await stack.userToken('e2e-shell'), SVC_CONFIG: path.join(stateDir, 'config.json') };
  }, 120_000);
  afterEach(async () => {
    for (const terminal of terminals.splice(0)) await terminal.close();
  });
  afterAll(async () => {
    await stack?.stop();
    await forge?.stop();
    if (stateDir) await rm(stateDir, { recursive: true, force: true });
  });

  const svc = svcIn(() => env);

  it('the owner gets a shell in /workspace: ls shows the repository, exit returns; audited; another person is told the worker does not exist', async () => {
    const created = await svc('sessions', 'create', '--template', 'repo-shell', '--wait', '--json');
    expect(created.code, created.stderr).toBe(0);
    const session = JSON.parse(created.stdout) as Session;
    const terminal = await openTerminal({ name: 'shell', command: [process.execPath, SVC, 'attach', session.worker_id, '--raw'], env, columns: 100, rows: 30 });
    terminals.push(terminal);
    await terminal.waitForText(/[$#]\s*$/m, 30_000);
    await terminal.keys('-l', 'ls /workspace; stty size; pwd');
    await terminal.keys('Enter');
    const listed = await terminal.waitForText('src', 15_000);
    expect(listed).toContain('README.md');
    await terminal.waitForText('30 100');
    await terminal.waitForText(/^\/workspace$/m);
    await terminal.keys('-l', 'exit');
    await terminal.keys('Enter');
    await waitFor('svc to return when the shell exits', () => terminal.exited(), 15_000, 100);

    const admin = await stack.userToken('e2e-admin', { svc_admin: true });
    const audit = (await (await fetch(`${stack.gatewayUrl}/v1/audit?action=terminal_opened`, { headers: { authorization: `Bearer ${admin}` } })).json()) as {
      items: Array<Record<string, unknown>>;
    };
    expect(audit.items).toEqual([expect.objectContaining({ actor: 'e2e-shell', action: 'terminal_opened', worker_id: session.worker_id, channel: 'cli' })]);

    const stranger = await svcIn(() => ({ ...env, SVC_TOKEN: '' }))('attach', session.worker_id, '--raw', '--token', await stack.userToken('someone-else'));
    expect(stranger).toMatchObject({ code: 1, stderr: expect.stringContaining(`worker ${session.worker_id} does not exist (worker_not_found)`) });
    expect((await svc('sessions', 'delete', session.id)).code).toBe(0);
  }, 90_000);
});
