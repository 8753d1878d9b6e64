import { spawn, type ChildProcess } from 'node:child_process';
import { createPrivateKey, sign, type JsonWebKey } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { apiPaths, LOCAL_SIGN_IN_CODE_FILE } from '@svc/protocol';
import { freePort, waitFor } from '@svc/test-support';

/** The local stack as `npm run up` runs it (built launcher), serving this workspace's console build. */
const LAUNCHER = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../deploy/local-stack/dist/main.js');

export interface RunningStack {
  url: string;
  /** The demo session's worker (it asks to write hello.txt). */
  demoWorker: string;
  /** A running worker's token, as its sidecar reads it inside the sandbox: to post events the way the sidecar does. */
  workerToken(workerId: string): Promise<string>;
  /** A worker's sandbox on this host (its root; the workspace is `workspace/` in it): to change files as its agent would. */
  sandboxRoot(workerId: string): string;
  /** The stack's sign-in code, as the person at the machine reads it (its state directory). */
  signInCode: string;
  /** A token of the built-in issuer for the sign-in code, as the sign-in page gets one: the local user's, or `user`'s of SVC_LOCAL_USERS. */
  signInToken(user?: string): Promise<string>;
  /** A token for someone other than the local user (`sub`, not an admin). */
  userToken(sub: string): Promise<string>;
  stop(): Promise<void>;
}

/** Where the stack's built-in issuer keeps its signing key in the state directory (`LOCAL_ISSUER_KEY_FILE` of `@svc/auth`, which the console may not import). */
const ISSUER_KEY_FILE = 'local-issuer-key.json';

/**
 * A token of the stack's built-in issuer for `sub`, not an admin: someone other than the local
 * user, signed with the issuer's key as the gateway expects (ES256, its `iss`, audience `svc`).
 */
async function userTokenFor(url: string, stateDir: string, sub: string): Promise<string> {
  const jwk = JSON.parse(await readFile(path.join(stateDir, ISSUER_KEY_FILE), 'utf8')) as JsonWebKey & { kid: string };
  const { issuer } = (await (await fetch(`${url}/.well-known/openid-configuration`)).json()) as { issuer: string };
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  const signed = `${part({ alg: 'ES256', kid: jwk.kid, typ: 'JWT' })}.${part({ iss: issuer, aud: 'svc', sub, iat: now, exp: now + 3600 })}`;
  const signature = sign('sha256', Buffer.from(signed), { key: createPrivateKey({ key: jwk, format: 'jwk' }), dsaEncoding: 'ieee-p1363' });
  return `${signed}.${signature.toString('base64url')}`;
}

/** How long the launcher may take to stop its services after Ctrl+C before it is killed. */
const STOP_GRACE_MS = 20_000;

/**
 * Starts the local stack in a temporary state directory on a free port, with `templates` (name →
 * TOML) as its templates directory when given; `stop` ends it and removes the directory.
 */
export async function startLocalStack(env: Record<string, string> = {}, templates?: Readonly<Record<string, string>>): Promise<RunningStack> {
  const stateDir = await mkdtemp(path.join(tmpdir(), 'svc-console-'));
  if (templates) {
    const templatesDir = path.join(stateDir, 'test-templates');
    await mkdir(templatesDir);
    for (const [name, text] of Object.entries(templates)) await writeFile(path.join(templatesDir, `${name}.toml`), text);
    env = { SVC_TEMPLATES_DIR: templatesDir, ...env };
  }
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, [LAUNCHER], {
    env: { ...process.env, SVC_STATE_DIR: stateDir, SVC_GATEWAY_PORT: String(port), SVC_GATEWAY_WORKER_PORT: '0', SVC_LOG_LEVEL: 'error', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null) child.kill('SIGINT');
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, STOP_GRACE_MS))]);
    if (child.exitCode === null) child.kill('SIGKILL');
    await rm(stateDir, { recursive: true, force: true });
  };
  try {
    await waitFor('the local stack', () => output.includes('Press Ctrl+C to stop.'), 90_000);
  } catch (err) {
    await stop();
    throw new Error(`${String(err)}; the launcher printed:\n${output}`, { cause: err });
  }
  const demoWorker = /demo worker[^\n]*: (wrk_[A-Za-z0-9_-]+)/.exec(output)?.[1];
  if (!demoWorker) {
    await stop();
    throw new Error(`the local stack started no demo session:\n${output}`);
  }
  const sandboxRoot = (workerId: string) => path.join(stateDir, 'sandboxes', workerId, 'root');
  const workerToken = async (workerId: string) => (await readFile(path.join(sandboxRoot(workerId), 'var/run/svc/token'), 'utf8')).trim();
  const signInCode = (await readFile(path.join(stateDir, LOCAL_SIGN_IN_CODE_FILE), 'utf8').catch(() => '')).trim();
  const url = `http://127.0.0.1:${port}`;
  const signInToken = async (user?: string) => {
    const response = await fetch(`${url}${apiPaths.localToken}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ code: signInCode, ...(user === undefined ? {} : { user }) }),
    });
    if (response.status !== 200) throw new Error(`the stack gave no token for ${user ?? 'the local user'}: ${response.status} ${await response.text()}`);
    return ((await response.json()) as { token: string }).token;
  };
  return { url, demoWorker, workerToken, sandboxRoot, signInCode, signInToken, userToken: (sub) => userTokenFor(url, stateDir, sub), stop };
}
