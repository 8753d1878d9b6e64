import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Static } from 'typebox';
import { listStoredEvents, publishJson, type NatsConnection } from '@svc/bus';
import { CodedError, EVENT_LIST_LIMIT, subjects, type PendingControlQuery, type WorkerParams } from '@svc/protocol';
import { gauge } from '@svc/service-kit';
import type { AgentInputFeeds, AgentInputPage } from '../agent-input-feeds.js';
import { createConcurrencyCap } from '../stream-limits.js';

type PendingRequest = FastifyRequest<{ Params: Static<typeof WorkerParams>; Querystring: Static<typeof PendingControlQuery> }>;

/**
 * Every poll says the sidecar is alive, but the session service records it at most every 10 s
 * and a sidecar polls again the moment it is answered: one message per worker every 1–2 s is
 * plenty. (Two generations of "reported" sets keep memory to the workers polling lately.)
 */
function createAliveReporter(nc: NatsConnection, windowMs = 1000): (workerId: string) => void {
  let current = new Set<string>();
  let previous = new Set<string>();
  let windowStart = Date.now();
  return (workerId) => {
    const now = Date.now();
    if (now - windowStart >= windowMs) {
      previous = now - windowStart >= 2 * windowMs ? new Set() : current;
      current = new Set();
      windowStart = now;
    }
    if (current.has(workerId) || previous.has(workerId)) return;
    current.add(workerId);
    publishJson(nc, subjects.workerAlive(workerId), { worker_id: workerId, at: new Date(now).toISOString() });
  };
}

const longPolls = gauge({
  name: 'svc_long_polls_in_flight',
  help: 'Sidecar long polls for agent inputs (GET …/control/pending with wait_ms) this gateway holds open.',
});

/**
 * `GET …/control/pending`: the sidecar's poll for agent inputs (decisions, people's messages and
 * interrupts) after a cursor, a long poll with `wait_ms`, answered from the worker's input log when
 * it can prove the answer, else from the store. Returns the handler.
 */
export function createPendingInputs(app: FastifyInstance, inputs: AgentInputFeeds): (request: PendingRequest, reply: FastifyReply) => Promise<AgentInputPage> {
  const nc = app.bus;
  const reportAlive = createAliveReporter(nc);
  // A sidecar holds one long poll at a time: a few more cover a restart's overlap, not a flood.
  const longPollsPerWorker = createConcurrencyCap(app.settings.streamLimits.maxLongPollsPerWorker);

  return async (request, reply) => {
    const workerId = request.params.id;
    const afterId = request.query.after_id ?? '0';
    reportAlive(workerId);
    const limit = request.query.limit ?? EVENT_LIST_LIMIT.default;
    const query = { worker_id: workerId, after_id: afterId, limit, agent_input: true, with_last_id: true };
    const deadline = Date.now() + (request.query.wait_ms ?? 0);

    const releaseLongPoll = request.query.wait_ms ? longPollsPerWorker.claim(workerId) : () => {};
    if (!releaseLongPoll) {
      throw new CodedError(
        'too_many_long_polls',
        `worker ${workerId} already holds ${longPollsPerWorker.max} long polls on this gateway, the most one worker may; poll again once one is answered`,
      );
    }
    let feed: ReturnType<typeof inputs.open>;
    try {
      feed = inputs.open(workerId);
    } catch (err) {
      releaseLongPoll();
      throw err;
    }
    longPolls.inc();
    // The store's page also tells the log where the worker's head is; announcements heard
    // meanwhile (the feed watched before the read) may prove more than the page holds.
    const readStore = async (): Promise<AgentInputPage> => {
      const page = await listStoredEvents(nc, query, { requestId: request.id });
      feed.log.seeded(afterId, page, limit);
      return page.items.length > 0 ? { items: page.items, total: page.total } : (feed.log.after(afterId, limit) ?? { items: [], total: page.total });
    };
    try {
      // A long poll may start from what the log proves (a consistent prefix: the rest follows
      // in the next poll); a plain poll reads the store, so a decision answered 201 a moment
      // ago is in it even if its announcement is still on the way.
      const known = (request.query.wait_ms ? feed.log.after(afterId, limit) : undefined) ?? (await readStore());
      const remaining = deadline - Date.now();
      if (known.items.length > 0 || remaining <= 0) return known;
      const arrived = await feed.nextInput(afterId, remaining, reply.raw);
      if (request.raw.socket?.destroyed) return known;
      const proven = arrived ? feed.log.after(afterId, limit) : undefined;
      // Nothing proven: an announcement is missing (or none came by the deadline; one may be
      // lost), and the store has every input after the cursor.
      return proven && proven.items.length > 0 ? proven : await readStore();
    } finally {
      longPolls.dec();
      feed.release();
      releaseLongPoll();
    }
  };
}
