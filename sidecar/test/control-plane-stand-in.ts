import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash } from 'node:crypto';
import { personMessageData, type IncomingEvent, type MessageImageType, type StoredEvent } from '@svc/protocol';

/** How long a poll with no decision after its cursor waits before its empty answer (a long poll that timed out, kept short). */
const EMPTY_POLL_ANSWER_MS = 20;

/**
 * The gateway routes a sidecar's outbox and control channel poller use, on loopback: `POST
 * …/sdk-events` (stores by uid, once), `GET …/control/pending` (the decisions and people's
 * messages after the cursor) and `GET …/messages/images/{sha256}` (a message's image). `down`
 * answers 503 with Retry-After, as the gateway does when a dependency is away.
 */
export async function startControlPlaneStandIn() {
  const received: IncomingEvent[] = [];
  const uids = new Set<string>();
  const decisions: StoredEvent[] = [];
  /** The images people's messages name, by SHA-256 (what is served may be made wrong on purpose). */
  const images = new Map<string, { media_type: MessageImageType; bytes: Buffer }>();
  const polls: string[] = [];
  const state = { down: false, imagesDown: false };
  const server = http.createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://stand-in');
    const answer = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      response.writeHead(status, { 'content-type': 'application/json', ...headers });
      response.end(JSON.stringify(body));
    };
    if (state.down) return answer(503, { code: 'store_unavailable', message: 'the store is unavailable' }, { 'retry-after': '0' });
    if (request.method === 'POST' && url.pathname.endsWith('/sdk-events')) {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        const { events } = JSON.parse(body) as { events: IncomingEvent[] };
        for (const event of events) {
          if (uids.has(event.uid)) continue;
          uids.add(event.uid);
          received.push(event);
        }
        answer(202, { accepted: events.length });
      });
      return;
    }
    if (request.method === 'GET' && url.pathname.endsWith('/control/pending')) {
      const after = BigInt(url.searchParams.get('after_id') ?? '0');
      polls.push(after.toString());
      const items = decisions.filter((decision) => BigInt(decision.id) > after);
      // No long wait here: an empty answer after a short pause, like a long poll that timed out.
      if (items.length === 0) return void setTimeout(() => answer(200, { items: [], total: decisions.length }), EMPTY_POLL_ANSWER_MS);
      return answer(200, { items, total: decisions.length });
    }
    const image = request.method === 'GET' ? /\/messages\/images\/([0-9a-f]{64})$/.exec(url.pathname) : null;
    if (image) {
      if (state.imagesDown) return answer(503, { code: 'bus_unavailable', message: 'NATS is unreachable' }, { 'retry-after': '0' });
      const kept = images.get(image[1]!);
      if (!kept) return answer(404, { code: 'image_not_found', message: `no image ${image[1]!}` });
      response.writeHead(200, { 'content-type': kept.media_type });
      return void response.end(kept.bytes);
    }
    answer(404, { code: 'not_found', message: url.pathname });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    decisions,
    polls,
    state,
    decide(id: number, requestId: string): void {
      decisions.push({
        id: String(id),
        worker_id: 'wrk_1',
        type: 'control_response',
        uid: `control_response:${requestId}`,
        ts: new Date().toISOString(),
        data: { request_id: requestId, decision: 'allow', decided_by: 'alice' },
        source: 'user:api:alice',
      });
    },
    images,
    /** A person's message, naming each image (kept, to be served, unless `keep` is false). */
    say(id: number, text: string, sent: ReadonlyArray<{ media_type: MessageImageType; bytes: Buffer }> = [], keep = true): void {
      const named = sent.map((image) => ({
        media_type: image.media_type,
        sha256: createHash('sha256').update(image.bytes).digest('hex'),
        bytes: image.bytes.length,
      }));
      if (keep) sent.forEach((image, i) => images.set(named[i]!.sha256, image));
      decisions.push({
        id: String(id),
        worker_id: 'wrk_1',
        type: 'system',
        uid: `message:msg_${id}`,
        ts: new Date().toISOString(),
        data: personMessageData(text, `msg_${id}`, undefined, named),
        source: 'user:api:alice',
      });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
