import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';

/** How long an answer whose agent went away is kept for the same request sent again. */
export const KEPT_ANSWER_MS = 10 * 60_000;
/** The most of one answer kept (a larger one is not read on once its agent has gone). */
const KEPT_ANSWER_MAX_BYTES = 4 * 1024 * 1024;
/** The most this replica holds of answers being recorded or kept, together. */
const KEPT_ANSWERS_MAX_BYTES = 256 * 1024 * 1024;
/** The most answers one worker may have read on and kept at once (more are cut off, as before). */
const KEPT_ANSWERS_PER_WORKER = 4;

/**
 * One answer as it comes from the upstream, recorded while its agent reads it (it may go away
 * before the end): its status, the headers the agent got, the bytes so far.
 */
export interface AnswerRecording {
  /** Records the answer's head; false when nothing more can be recorded (the replica holds too much). */
  begin(status: number, headers: OutgoingHttpHeaders): boolean;
  /** Records a chunk; false once the answer is past what is kept (it is then not kept). */
  write(chunk: Buffer): boolean;
  /** The answer ended whole: kept for a re-ask when its agent has gone. */
  end(): void;
  /** The answer broke off, or is not to be kept: dropped, and a re-ask waiting on it is cut off. */
  drop(): void;
  /**
   * Its agent went away before the end: the answer is to be read on and kept, for the same
   * request sent again; false when it cannot be (too large, the worker keeps too many).
   */
  orphan(): boolean;
}

interface Entry {
  workerId: string;
  key: string;
  status?: number;
  headers?: OutgoingHttpHeaders;
  chunks: Buffer[];
  bytes: number;
  /** Still taking the answer's chunks (false once it ended, broke off, or grew past what is kept). */
  recording: boolean;
  ended: boolean;
  orphaned: boolean;
  /** A re-ask answered from this entry while the answer still comes. */
  follower?: ServerResponse;
  expiry?: NodeJS.Timeout;
}

export interface KeptAnswers {
  /** Starts recording one of the worker's answers under its request's digest (`ModelRequestBody.reAsk`; undefined: not recorded). */
  record(workerId: string, digest: string | undefined): AnswerRecording | undefined;
  /**
   * The worker's kept answer to the same request, taken (one re-ask takes it): a function that
   * answers with it; undefined when there is none.
   */
  take(workerId: string, digest: string | undefined): ((response: ServerResponse) => void) | undefined;
  /** Drops everything kept (the gateway is closing). */
  clear(): void;
}

/**
 * The answers this replica keeps for a re-ask (docs/model-proxy.md, "A re-ask after a crash").
 * An agent whose sidecar is killed while the model answers is killed with it; started again on
 * its conversation it sends the very request again. The upstream has taken that request (and
 * bills it): its answer, read to its end although nobody reads it, is kept for `keepMs` and given
 * to the same request sent again instead of asking the model twice. Every answer is recorded
 * while it streams, up to `maxAnswerBytes`, within `maxTotalBytes` for the replica, since the
 * agent may go at any point of it; only an orphaned one outlives its exchange.
 */
export function createKeptAnswers(options: { keepMs?: number; maxAnswerBytes?: number; maxTotalBytes?: number; maxPerWorker?: number } = {}): KeptAnswers {
  const keepMs = options.keepMs ?? KEPT_ANSWER_MS;
  const maxAnswerBytes = options.maxAnswerBytes ?? KEPT_ANSWER_MAX_BYTES;
  const maxTotalBytes = options.maxTotalBytes ?? KEPT_ANSWERS_MAX_BYTES;
  const maxPerWorker = options.maxPerWorker ?? KEPT_ANSWERS_PER_WORKER;
  const kept = new Map<string, Entry>();
  const keptOf = new Map<string, number>();
  let held = 0;

  /** Lets the entry go: its bytes, its place among the kept, a re-ask still following it (cut off unless the answer ended). */
  const letGo = (entry: Entry) => {
    entry.recording = false;
    if (entry.follower && !entry.ended) entry.follower.destroy();
    held -= entry.bytes;
    entry.bytes = 0;
    entry.chunks = [];
    clearTimeout(entry.expiry);
    unkeep(entry);
  };
  const unkeep = (entry: Entry) => {
    if (kept.get(entry.key) !== entry) return;
    kept.delete(entry.key);
    const left = (keptOf.get(entry.workerId) ?? 1) - 1;
    if (left > 0) keptOf.set(entry.workerId, left);
    else keptOf.delete(entry.workerId);
  };
  const follow = (entry: Entry, response: ServerResponse) => {
    if (entry.status !== undefined) response.writeHead(entry.status, entry.headers);
    for (const chunk of entry.chunks) response.write(chunk);
    if (entry.ended) return void response.end();
    entry.follower = response;
    response.once('close', () => letGo(entry));
  };

  return {
    record(workerId, digest) {
      if (digest === undefined) return undefined;
      const entry: Entry = { workerId, key: `${workerId} ${digest}`, chunks: [], bytes: 0, recording: true, ended: false, orphaned: false };
      return {
        begin(status, headers) {
          if (!entry.recording || held >= maxTotalBytes) return (letGo(entry), false);
          entry.status = status;
          entry.headers = headers;
          entry.follower?.writeHead(status, headers);
          return true;
        },
        write(chunk) {
          if (!entry.recording) return false;
          if (entry.bytes + chunk.length > maxAnswerBytes || held + chunk.length > maxTotalBytes) return (letGo(entry), false);
          entry.chunks.push(chunk);
          entry.bytes += chunk.length;
          held += chunk.length;
          entry.follower?.write(chunk);
          return true;
        },
        end() {
          if (!entry.recording) return;
          entry.ended = true;
          entry.recording = false;
          entry.follower?.end();
          // Kept only for a re-ask still to come: an answer its agent read whole, or one a re-ask already took, goes.
          if (!entry.orphaned || entry.follower) letGo(entry);
        },
        drop: () => letGo(entry),
        orphan() {
          if (!entry.recording || entry.orphaned) return false;
          // A later orphan of the same request replaces an earlier one.
          const earlier = kept.get(entry.key);
          if (earlier) letGo(earlier);
          if ((keptOf.get(workerId) ?? 0) >= maxPerWorker) return (letGo(entry), false);
          entry.orphaned = true;
          kept.set(entry.key, entry);
          keptOf.set(workerId, (keptOf.get(workerId) ?? 0) + 1);
          entry.expiry = setTimeout(() => letGo(entry), keepMs);
          entry.expiry.unref();
          return true;
        },
      };
    },

    take(workerId, digest) {
      const entry = digest === undefined ? undefined : kept.get(`${workerId} ${digest}`);
      if (!entry) return undefined;
      unkeep(entry);
      clearTimeout(entry.expiry);
      return (response) => {
        follow(entry, response);
        if (entry.ended) letGo(entry);
      };
    },

    clear() {
      for (const entry of [...kept.values()]) letGo(entry);
    },
  };
}
