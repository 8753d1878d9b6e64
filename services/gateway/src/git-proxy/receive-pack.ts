import { createReadStream, createWriteStream } from 'node:fs';
import { open } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { CodedError, ZERO_COMMIT, type GitPushInput, type WorkerRecord, type WorkerWorkspace } from '@svc/protocol';
import type { Verdict } from '../raised-requests.js';
import { readPushRequestHead, refusedPushReport, type PushRequestHead } from './pkt-line.js';
import { readPushedPack, type PackedPack } from './pushed-pack.js';
import type { PushPolicy } from './push-policy.js';

/** The most of a push's request the proxy reads for its commands (before the pack). */
const HEAD_READ_BYTES = 1024 * 1024;

/** A push, read and decided: its body on disk (to forward), and each ref's verdict. */
export interface DecidedPush {
  head: PushRequestHead;
  bodyFile: string;
  verdicts: Array<{ ref: string; verdict: Verdict }>;
  /** The refs refused and why, for the report git prints; empty when every ref was allowed. */
  refusals: Map<string, string>;
}

/**
 * A `git-receive-pack` request from the sandbox (docs/workspace.md "Pushes"): its body written to
 * `dir` (at most `maxBytes`, gzip undone), its ref updates read, its pack indexed and read for the
 * commits and files each ref would get, and each ref decided as a `git_push` request in turn. The
 * first refusal ends the deciding: a push lands whole or not at all.
 */
export async function decidePush(options: {
  request: IncomingMessage;
  dir: string;
  maxBytes: number;
  worker: WorkerRecord & { workspace: WorkerWorkspace };
  policy: PushPolicy;
  gone: AbortSignal;
}): Promise<DecidedPush> {
  const { request, dir, worker } = options;
  const bodyFile = `${dir}/body`;
  await spool(request, bodyFile, options.maxBytes);
  const head = await readHead(bodyFile);
  const pack = head.commands.some((command) => command.new !== ZERO_COMMIT) ? await readPack(dir, bodyFile, head.packOffset) : undefined;
  const verdicts: DecidedPush['verdicts'] = [];
  const refusals = new Map<string, string>();
  for (const command of head.commands) {
    const changes =
      pack && command.new !== ZERO_COMMIT
        ? pack.changesTo(command.new)
        : { commits: [], paths: [], truncated: false, alreadyOnRemote: command.new !== ZERO_COMMIT };
    const input: GitPushInput = {
      ref: command.ref,
      old_commit: command.old,
      new_commit: command.new,
      remote: worker.workspace.repo,
      commits: changes.commits,
      paths: changes.paths,
      ...(changes.truncated ? { truncated: true } : {}),
      ...(changes.alreadyOnRemote ? { already_on_remote: true } : {}),
    };
    const verdict = await options.policy.decide(worker, input, options.gone);
    verdicts.push({ ref: command.ref, verdict });
    if (!verdict.allow) {
      refusals.set(command.ref, `svc: ${verdict.reason}`);
      break;
    }
  }
  if (refusals.size > 0)
    for (const command of head.commands) if (!refusals.has(command.ref)) refusals.set(command.ref, 'svc: another ref of this push was refused');
  return { head, bodyFile, verdicts, refusals };
}

/** The report git prints for a refused push. */
export function refusalReport(push: DecidedPush): Buffer {
  const [first] = [...push.refusals.values()];
  return refusedPushReport(push.head, push.refusals, `push refused: ${first ?? ''}`);
}

/** The body as git sent it, without its transfer's gzip, on disk; past `maxBytes` a 413. */
async function spool(request: IncomingMessage, file: string, maxBytes: number): Promise<void> {
  let bytes = 0;
  const bound = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      bytes += chunk.length;
      if (bytes > maxBytes) return done(new CodedError('payload_too_large', `a push may carry at most ${maxBytes} bytes (SVC_GIT_PUSH_MAX_BYTES)`));
      done(null, chunk);
    },
  });
  const stages: Readable[] = [request];
  const encoding = request.headers['content-encoding'];
  if (encoding === 'gzip' || encoding === 'x-gzip') stages.push(request.pipe(createGunzip()));
  await pipeline(stages[stages.length - 1]!, bound, createWriteStream(file));
}

async function readHead(file: string): Promise<PushRequestHead> {
  const handle = await open(file, 'r');
  try {
    const buffer = Buffer.alloc(HEAD_READ_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, HEAD_READ_BYTES, 0);
    let head: PushRequestHead | undefined;
    try {
      head = readPushRequestHead(buffer.subarray(0, bytesRead));
    } catch (err) {
      throw new CodedError('invalid_request', `not a push git-receive-pack takes: ${(err as Error).message}`);
    }
    if (!head) throw new CodedError('invalid_request', `not a push git-receive-pack takes: its ref updates do not end within ${HEAD_READ_BYTES} bytes`);
    return head;
  } finally {
    await handle.close();
  }
}

async function readPack(dir: string, bodyFile: string, offset: number): Promise<PackedPack> {
  try {
    return await readPushedPack(dir, bodyFile, offset);
  } catch (err) {
    throw new CodedError('invalid_request', `the push's pack could not be read: ${(err as Error).message}`);
  }
}

/** The body from `offset`, to forward. */
export function bodyFrom(file: string): Readable {
  return createReadStream(file);
}
