import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CodedError, SYSTEM_SUBTYPES, workspaceOfWorker, type WorkerRecord, type WorkerWorkspace } from '@svc/protocol';
import { parseGitCredentials } from '@svc/service-kit';
import { withNoThin } from '../git-proxy/pkt-line.js';
import { createGitRemotes, pickHeaders } from '../git-proxy/remote.js';
import { createPushPolicy } from '../git-proxy/push-policy.js';
import { bodyFrom, decidePush, refusalReport, type DecidedPush } from '../git-proxy/receive-pack.js';
import { createComponentRecords } from '../raised-requests.js';
import { routePlugin } from './route-plugin.js';

/** Headers of the remote's answers that git is given. */
const FORWARDED_ANSWER_HEADERS = ['content-type', 'cache-control', 'expires', 'pragma', 'content-encoding'];
/** The most an advertisement of refs may take (it is read whole, to add `no-thin`). */
const ADVERTISEMENT_MAX_BYTES = 64 * 1024 * 1024;
/** The default bound of one push (`SVC_GIT_PUSH_MAX_BYTES`). */
const DEFAULT_GIT_PUSH_MAX_BYTES = 512 * 1024 * 1024;

/**
 * `/v1/workers/{id}/git/…`: the git smart-HTTP proxy of the worker port (docs/workspace.md). The
 * sandbox's git reaches its repository here, through its sidecar, with the worker token; the
 * gateway adds the control plane's credential for the repository's host (`SVC_GIT_CREDENTIALS`).
 * Fetches pass; a push is read (its refs, commits and files) and each ref decided as a `git_push`
 * request before it is forwarded, a refused one answered with git's own report of a refusal.
 * Only the four requests of smart HTTP for the worker's one repository: nothing else of the
 * remote host is reachable this way.
 */
export const gitProxyRoutes = routePlugin('svc-git-proxy-routes', ['svc-settings', 'svc-bus', 'svc-worker-directory', 'svc-live-feeds'], async (app) => {
  const credentials = parseGitCredentials(app.settings.gitCredentials);
  const maxPushBytes = app.settings.gitPushMaxBytes ?? DEFAULT_GIT_PUSH_MAX_BYTES;
  const records = createComponentRecords(app.bus, 'git', app.log);
  const policy = createPushPolicy({ nc: app.bus, live: app.liveFeeds, records });
  const remotes = createGitRemotes(credentials);
  const remote = remotes.answer;
  app.addHook('onClose', async () => {
    records.close();
    remotes.close();
  });
  // What git prints of a refused request is its status only: the reason is logged too.
  app.addHook('onError', async (request, _reply, error) => {
    request.log.info({ worker_id: (request.params as { id?: string }).id, reason: error.message }, 'git proxy request refused');
  });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, _payload, done) => done(null));

  async function workerOf(request: FastifyRequest): Promise<WorkerRecord & { workspace: WorkerWorkspace }> {
    const workerId = (request.params as { id: string }).id;
    return workspaceOfWorker(workerId, await app.workers.get(workerId));
  }

  function relay(reply: FastifyReply, answer: IncomingMessage, body: Readable | Buffer = answer) {
    return reply
      .code(answer.statusCode ?? 502)
      .headers(pickHeaders(answer.headers, FORWARDED_ANSWER_HEADERS))
      .send(body);
  }

  const schema = { hide: true } as const;

  app.get('/v1/workers/:id/git/info/refs', { config: { auth: 'worker' }, schema }, async (request, reply) => {
    const service = (request.query as { service?: string }).service;
    if (service !== 'git-upload-pack' && service !== 'git-receive-pack')
      throw new CodedError('invalid_request', 'the git proxy speaks smart HTTP only: ?service=git-upload-pack or git-receive-pack');
    const worker = await workerOf(request);
    const answer = await remote(worker, `info/refs?service=${service}`, request.raw);
    if (service === 'git-upload-pack' || answer.statusCode !== 200 || answer.headers['content-encoding']) return relay(reply, answer);
    return relay(reply, answer, withNoThin(await readWhole(answer, ADVERTISEMENT_MAX_BYTES)));
  });

  app.post('/v1/workers/:id/git/git-upload-pack', { config: { auth: 'worker' }, schema }, async (request, reply) => {
    const worker = await workerOf(request);
    return relay(reply, await remote(worker, 'git-upload-pack', request.raw));
  });

  /** Workers with a push under way: one at a time each (a push is spooled to disk and held while it is decided). */
  const pushing = new Set<string>();
  app.post('/v1/workers/:id/git/git-receive-pack', { config: { auth: 'worker' }, schema }, async (request, reply) => {
    const worker = await workerOf(request);
    if (pushing.has(worker.worker_id)) throw new CodedError('rate_limited', `worker ${worker.worker_id} has a push under way: one at a time`);
    pushing.add(worker.worker_id);
    reply.raw.once('close', () => pushing.delete(worker.worker_id));
    const dir = await mkdtemp(path.join(tmpdir(), 'svc-git-push-'));
    const gone = new AbortController();
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) gone.abort();
    });
    try {
      const push = await decidePush({ request: request.raw, dir, maxBytes: maxPushBytes, worker, policy, gone: gone.signal });
      if (push.refusals.size > 0) {
        await recordPush(worker.worker_id, push, 'refused');
        return await reply
          .code(200)
          .header('content-type', 'application/x-git-receive-pack-result')
          .header('cache-control', 'no-cache')
          .send(refusalReport(push));
      }
      const answer = await remote(worker, 'git-receive-pack', request.raw, bodyFrom(push.bodyFile));
      await recordPush(worker.worker_id, push, answer.statusCode === 200 ? 'forwarded' : `answered ${answer.statusCode}`);
      await relay(reply, answer);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  function recordPush(workerId: string, push: DecidedPush, outcome: string) {
    const refs = push.head.commands.map((command) => command.ref);
    return records.record(workerId, {
      type: 'system',
      uid: `git:${randomUUID()}`,
      data: {
        level: outcome === 'refused' ? 'warn' : 'info',
        subtype: SYSTEM_SUBTYPES.gitPush,
        message: `push of ${refs.join(', ')}: ${outcome}`,
        details: {
          outcome,
          refs: push.head.commands.map((command) => ({ ref: command.ref, old_commit: command.old, new_commit: command.new })),
          decisions: push.verdicts.map(({ ref, verdict }) => ({ ref, allow: verdict.allow, by: verdict.by, reason: verdict.reason })),
        },
      },
    });
  }
});

/** A stream's bytes, at most `maxBytes`. */
async function readWhole(stream: Readable, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) throw new CodedError('repository_unreachable', `the repository's list of refs is over ${maxBytes} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}
