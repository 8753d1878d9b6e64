import { spawn } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough, Readable, Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CoreV1Api, Exec, Log, V1Status } from '@kubernetes/client-node';
import { CodedError } from '@svc/protocol';
import type { Logger } from '@svc/service-kit';
import type { ExecResult, Sandbox, SandboxHandle } from './provider.js';

/** The one container of a sandbox Pod. */
export const SANDBOX_CONTAINER = 'sandbox';

/** Where `startBackground` leaves the program's argv and environment for the Pod's start script. */
export const START_FILE = '/var/run/svc/start.args';

/** The parts of the Kubernetes API a sandbox Pod is driven through. */
export interface PodClients {
  core: CoreV1Api;
  exec: Exec;
  logs: Log;
  log: Logger;
}

type PodHandle = Extract<SandboxHandle, { provider: 'kubernetes' }>;

/** Runs a program in the Pod's container, without a shell, and waits for it. */
type RunInPod = (argv: readonly string[], stdin: Readable | null, timeoutMs: number) => Promise<ExecResult>;

/**
 * A sandbox Pod as a `Sandbox`: exec through the API, uploads as `dd of=<path>` fed on stdin
 * (never a shell), logs, and delete (stopping a Pod deletes it: its files go with it).
 */
export function openPod(clients: PodClients, handle: SandboxHandle): Sandbox {
  if (handle.provider !== 'kubernetes') throw new Error(`the kubernetes provider cannot open a ${handle.provider} sandbox`);
  const run: RunInPod = (argv, stdin, timeoutMs) => execInPod(clients.exec, handle, argv, stdin, timeoutMs);
  const upload = (sandboxPath: string, content: Uint8Array | { fromFile: string }, mode = 0o644) => uploadToPod(run, handle, sandboxPath, content, mode);
  const remove = (graceMs: number) => removePod(clients.core, handle, graceMs);
  return {
    handle,
    resolvePath: (sandboxPath) => sandboxPath,
    upload,
    exec: (argv, execOptions = {}) => run(argv, null, execOptions.timeoutMs ?? 30_000),
    importDirectory: (hostDir, sandboxPath) => importIntoPod(run, hostDir, sandboxPath),
    async exportFile(sandboxPath, hostFile, maxBytes) {
      // The image's own programs (the agent may have put others on PATH); a regular file only, its size first.
      const found = await run(['/usr/bin/stat', '-c', '%F %s', '--', sandboxPath], null, 30_000);
      const size = Number(found.stdout.trim().split(' ').pop());
      if (found.code !== 0 || !found.stdout.startsWith('regular file ')) throw new Error(`${sandboxPath} is not a regular file`);
      if (size > maxBytes) throw new CodedError('payload_too_large', `${sandboxPath} is ${size} bytes; at most ${maxBytes} are read out of a sandbox here`);
      // exec's output arrives as text: the bytes travel base64, at most the size seen.
      // (The path and size are arguments of a fixed script, never part of it.)
      const read = await run(['/bin/sh', '-c', '/usr/bin/head -c "$1" -- "$2" | /usr/bin/base64 -w 0', 'sh', String(size), sandboxPath], null, 10 * 60_000);
      if (read.code !== 0) throw new Error(`reading ${sandboxPath} failed (${read.code}): ${read.stderr.trim()}`);
      await writeFile(hostFile, Buffer.from(read.stdout, 'base64'));
    },
    async startBackground(argv, env) {
      const lines = [...Object.entries(env).map(([name, value]) => `${name}=${value}`), ...argv];
      const bad = lines.find((line) => line.includes('\n'));
      if (bad !== undefined) throw new Error('an argument or environment value holds a newline, which a Pod start file cannot carry');
      if (argv[0]?.includes('=')) throw new Error(`the program's path must not contain "=": ${argv[0]}`);
      // Written aside and renamed, so the start script never reads half a file.
      await upload(`${START_FILE}.tmp`, Buffer.from(`${lines.join('\n')}\n`), 0o600);
      const moved = await run(['mv', `${START_FILE}.tmp`, START_FILE], null, 30_000);
      if (moved.code !== 0) throw new Error(`mv ${START_FILE} in pod ${handle.pod} failed: ${moved.stderr.trim()}`);
      clients.log.info({ pod: handle.pod }, 'sandbox program started');
    },
    logs: (options) => podLogLines(clients.logs, handle, options),
    stop: remove,
    destroy: remove,
  };
}

/** A host directory's tree into the Pod: the host's `tar` streamed to the Pod's (on exec's stdin: no shell, nothing spliced). */
async function importIntoPod(run: RunInPod, hostDir: string, sandboxPath: string): Promise<void> {
  const packer = spawn('tar', ['-C', hostDir, '-c', '.'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const unpacked = await run(['tar', '-x', '-C', sandboxPath], packer.stdout, 10 * 60_000);
  if (unpacked.code !== 0) throw new Error(`tar -x into ${sandboxPath} failed (${unpacked.code}): ${unpacked.stderr.trim()}`);
}

async function execInPod(exec: Exec, handle: PodHandle, argv: readonly string[], stdin: Readable | null, timeoutMs: number): Promise<ExecResult> {
  let stdout = '';
  let stderr = '';
  const collect = (append: (text: string) => void) =>
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        append(chunk.toString('utf8'));
        done();
      },
    });
  return new Promise<ExecResult>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`exec ${argv[0]} in pod ${handle.pod} took longer than ${timeoutMs} ms`)), timeoutMs);
    const onStatus = (status: V1Status) => {
      clearTimeout(timer);
      resolve({ code: exitCodeOf(status), stdout, stderr });
    };
    exec
      .exec(
        handle.namespace,
        handle.pod,
        SANDBOX_CONTAINER,
        [...argv],
        collect((t) => (stdout += t)),
        collect((t) => (stderr += t)),
        stdin,
        false,
        onStatus,
      )
      .catch((err: unknown) => {
        clearTimeout(timer);
        reject(err instanceof Error ? err : new Error(String(err)));
      });
  });
}

async function uploadToPod(run: RunInPod, handle: PodHandle, sandboxPath: string, content: Uint8Array | { fromFile: string }, mode: number): Promise<void> {
  const { pod } = handle;
  if (!path.posix.isAbsolute(sandboxPath) || path.posix.normalize(sandboxPath) !== sandboxPath)
    throw new Error(`sandbox path must be absolute and normalized, got ${JSON.stringify(sandboxPath)}`);
  const made = await run(['mkdir', '-p', path.posix.dirname(sandboxPath)], null, 30_000);
  if (made.code !== 0) throw new Error(`mkdir ${path.posix.dirname(sandboxPath)} in pod ${pod} exited with ${made.code}: ${made.stderr.trim()}`);
  const source = content instanceof Uint8Array ? Readable.from([Buffer.from(content)]) : createReadStream(content.fromFile);
  const stdin = source.pipe(new PassThrough());
  const written = await run(['dd', `of=${sandboxPath}`, 'bs=1M', 'status=none'], stdin, 300_000);
  if (written.code !== 0) throw new Error(`writing ${sandboxPath} in pod ${pod} failed (${written.code}): ${written.stderr.trim()}`);
  const chmod = await run(['chmod', mode.toString(8), sandboxPath], null, 30_000);
  if (chmod.code !== 0) throw new Error(`chmod ${sandboxPath} in pod ${pod} failed: ${chmod.stderr.trim()}`);
}

async function removePod(core: CoreV1Api, handle: PodHandle, graceMs: number): Promise<void> {
  const { pod: name, namespace } = handle;
  try {
    await core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: Math.ceil(graceMs / 1000) });
  } catch (err) {
    if (statusCodeOf(err) === 404) return;
    throw err;
  }
  // Gone when the API no longer has it (the kubelet has stopped its containers).
  for (;;) {
    try {
      await core.readNamespacedPod({ name, namespace });
    } catch (err) {
      if (statusCodeOf(err) === 404) return;
      throw err;
    }
    await sleep(200);
  }
}

async function* podLogLines(logs: Log, handle: PodHandle, options: { tail: number; follow: boolean; signal: AbortSignal }): AsyncGenerator<string> {
  const { tail, follow, signal } = options;
  const lines = new PassThrough();
  const done = new Promise<void>((resolve) => lines.once('end', resolve));
  const controller = await logs.log(handle.namespace, handle.pod, SANDBOX_CONTAINER, lines, { follow, tailLines: tail });
  // Aborting the request does not end the stream it was piped into: end it here.
  const abort = () => {
    controller.abort();
    lines.end();
  };
  signal.addEventListener('abort', abort, { once: true });
  let pending = '';
  try {
    for await (const chunk of lines) {
      const parts = (pending + (chunk as Buffer).toString('utf8')).split('\n');
      pending = parts.pop() ?? '';
      yield* parts;
    }
    if (pending !== '') yield pending;
  } finally {
    signal.removeEventListener('abort', abort);
    controller.abort();
    await done.catch(() => {});
  }
}

/** The exit code an exec's final status carries (`Success` is 0). */
function exitCodeOf(status: V1Status): number {
  if (status.status === 'Success') return 0;
  const cause = status.details?.causes?.find((c) => c.reason === 'ExitCode');
  const code = Number(cause?.message);
  return Number.isInteger(code) ? code : 1;
}

/** The HTTP status of a Kubernetes API error (404: the Pod is gone). */
function statusCodeOf(err: unknown): number | undefined {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'number' ? code : undefined;
}
