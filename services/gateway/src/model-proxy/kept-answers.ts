import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';

/** How long an answer whose agent went away is read on at most, and kept after its end for the same request sent again. */
export const KEPT_ANSWER_MS = 10 * 60_000;
/** The most of one answer kept (a larger one is let go, and its upstream stopped once its agent has gone). */
const KEPT_ANSWER_MAX_BYTES = 4 * 1024 * 1024;
/** The most one worker's answers being recorded or kept may hold together. */
const KEPT_BYTES_PER_WORKER = 16 * 1024 * 1024;
/** The most this replica holds of answers being recorded or kept, together. */
const KEPT_ANSWERS_MAX_BYTES = 256 * 1024 * 1024;
/** The most answers one worker may have read on and kept at once (more are let go, as before). */
const KEPT_ANSWERS_PER_WORKER = 4;

/**
 * One answer as it comes from the upstream, recorded while its agent reads it (it may go away
 * before the end): its status, the headers the agent got, the bytes so far.
 */
export interface AnswerRecording {
  /** Records the answer's head; false when nothing more can be recorded (past a bound). */
  begin(status: number, headers: OutgoingHttpHeaders): boolean;
  /** Records a chunk (nothing once the recording was let go). */
  write(chunk: Buffer): void;
  /** The answer ended: kept for a re-ask when its agent has gone and it is `whole` (it ended as a successful answer ends). */
  end(whole: boolean): void;
  /** The answer broke off, or is not to be kept: let go, and a re-ask following it is cut off. */
  drop(): void;
  /**
   * Its agent went away before the end: the answer is to be read on and kept for the same
   * request sent again; false when it cannot be (let go already, the worker keeps as many as it
   * may, an earlier ask of the same request is kept, the gateway is closing).
   */
  orphan(): boolean;
}

/** What the exchange behind a recording is told. */
export interface RecordingHooks {
  /** Its agent has gone and nobody will take the rest: the upstream request is to stop now. */
  abandon(): void;
  /** The recording is let go: nothing of it is kept any more. */
  released(): void;
}

interface Entry {
  workerId: string;
  key: string;
  hooks: RecordingHooks;
  status?: number;
  headers?: OutgoingHttpHeaders;
  chunks: Buffer[];
  bytes: number;
  /** Still taking the answer's chunks (false once it ended, broke off, or was let go). */
  recording: boolean;
  ended: boolean;
  orphaned: boolean;
  released: boolean;
  /** A re-ask answered from this entry, at its own pace: `sent` chunks written, `waiting` for it to drain. */
  follower?: ServerResponse;
  sent: number;
  waiting: boolean;
  expiry?: NodeJS.Timeout;
}

export interface KeptAnswers {
  /** Starts recording one of the worker's answers under its request's digest (`ModelRequestBody.reAsk`; undefined: not recorded). */
  record(workerId: string, digest: string | undefined, hooks: RecordingHooks): AnswerRecording | undefined;
  /**
   * The worker's kept answer to the same request, taken (one re-ask takes it): a function that
   * answers with it; undefined when there is none.
   */
  take(workerId: string, digest: string | undefined): ((response: ServerResponse) => void) | undefined;
  /** Lets everything go and keeps nothing more (the gateway is closing): answers still read on are stopped. */
  close(): void;
}

interface Limits {
  keepMs: number;
  maxAnswerBytes: number;
  maxWorkerBytes: number;
  maxTotalBytes: number;
  maxPerWorker: number;
}

const adding = (counts: Map<string, number>, workerId: string, delta: number) => {
  const now = (counts.get(workerId) ?? 0) + delta;
  if (now > 0) counts.set(workerId, now);
  else counts.delete(workerId);
};

/** The answers of `createKeptAnswers`, and the bytes and orphans each worker and the replica hold. */
class KeptAnswerPool {
  /** Kept answers nobody has taken yet, by worker and digest. */
  readonly kept = new Map<string, Entry>();
  /** Every orphaned answer not let go yet (kept, or followed by its re-ask). */
  readonly orphans = new Set<Entry>();
  private readonly orphansOf = new Map<string, number>();
  private readonly bytesOf = new Map<string, number>();
  private held = 0;
  closing = false;

  constructor(readonly limits: Limits) {}

  /** Lets the entry go: its bytes, its place, a re-ask still following it (cut off unless it had it all), the upstream if nobody reads it. */
  letGo(entry: Entry): void {
    if (entry.released) return;
    entry.released = true;
    entry.recording = false;
    const followed = entry.follower && entry.ended && entry.sent === entry.chunks.length;
    if (entry.follower && !followed) entry.follower.destroy();
    this.held -= entry.bytes;
    adding(this.bytesOf, entry.workerId, -entry.bytes);
    entry.bytes = 0;
    entry.chunks = [];
    clearTimeout(entry.expiry);
    if (this.kept.get(entry.key) === entry) this.kept.delete(entry.key);
    if (this.orphans.delete(entry)) adding(this.orphansOf, entry.workerId, -1);
    if (entry.orphaned && !entry.ended) entry.hooks.abandon();
    entry.hooks.released();
  }

  expire(entry: Entry, afterMs: number): void {
    clearTimeout(entry.expiry);
    entry.expiry = setTimeout(() => this.letGo(entry), afterMs);
    entry.expiry.unref();
  }

  /** Writes what the re-ask has not had yet, as fast as it reads; ends it once it has the whole answer. */
  pump(entry: Entry): void {
    const follower = entry.follower;
    if (!follower || entry.waiting || entry.released) return;
    if (entry.status !== undefined && !follower.headersSent) follower.writeHead(entry.status, entry.headers);
    while (entry.sent < entry.chunks.length) {
      if (follower.write(entry.chunks[entry.sent++]!)) continue;
      entry.waiting = true;
      follower.once('drain', () => {
        entry.waiting = false;
        this.pump(entry);
      });
      return;
    }
    if (entry.ended) follower.end();
  }

  begin(entry: Entry, status: number, headers: OutgoingHttpHeaders): boolean {
    if (!entry.recording || this.held >= this.limits.maxTotalBytes || (this.bytesOf.get(entry.workerId) ?? 0) >= this.limits.maxWorkerBytes)
      return (this.letGo(entry), false);
    entry.status = status;
    entry.headers = headers;
    this.pump(entry);
    return true;
  }

  write(entry: Entry, chunk: Buffer): void {
    if (!entry.recording) return;
    const { maxAnswerBytes, maxTotalBytes, maxWorkerBytes } = this.limits;
    const worker = this.bytesOf.get(entry.workerId) ?? 0;
    if (entry.bytes + chunk.length > maxAnswerBytes || this.held + chunk.length > maxTotalBytes || worker + chunk.length > maxWorkerBytes)
      return this.letGo(entry);
    entry.chunks.push(chunk);
    entry.bytes += chunk.length;
    this.held += chunk.length;
    adding(this.bytesOf, entry.workerId, chunk.length);
    this.pump(entry);
  }

  end(entry: Entry, whole: boolean): void {
    if (!entry.recording) return;
    entry.recording = false;
    entry.ended = true;
    // A re-ask following it gets it as it came, and lets it go once it has it all.
    if (entry.follower) return this.pump(entry);
    // Kept only for a re-ask still to come, and only whole: after anything else the agent asks the model again.
    if (!entry.orphaned || !whole) return this.letGo(entry);
    this.expire(entry, this.limits.keepMs);
  }

  orphan(entry: Entry): boolean {
    const { workerId } = entry;
    if (!entry.recording || entry.orphaned || this.closing || this.kept.has(entry.key)) return false;
    if ((this.orphansOf.get(workerId) ?? 0) >= this.limits.maxPerWorker) return false;
    entry.orphaned = true;
    this.kept.set(entry.key, entry);
    this.orphans.add(entry);
    adding(this.orphansOf, workerId, 1);
    return true;
  }
}

/**
 * The answers this replica keeps for a re-ask (docs/model-proxy.md, "A re-ask after a crash").
 * An agent whose sidecar is killed while the model answers is killed with it; started again on
 * its conversation it sends the very request again. The upstream has taken that request (and
 * bills it): its answer, read to its end although nobody reads it, is kept for `keepMs` and given
 * to the same request sent again instead of asking the model twice. Every answer is recorded
 * while it streams, within bounds per answer, per worker and per replica, since the agent may go
 * at any point of it; only an orphaned one outlives its exchange, and its bytes count until the
 * re-ask that took it has had them all.
 */
export function createKeptAnswers(options: Partial<Limits> = {}): KeptAnswers {
  const pool = new KeptAnswerPool({
    keepMs: options.keepMs ?? KEPT_ANSWER_MS,
    maxAnswerBytes: options.maxAnswerBytes ?? KEPT_ANSWER_MAX_BYTES,
    maxWorkerBytes: options.maxWorkerBytes ?? KEPT_BYTES_PER_WORKER,
    maxTotalBytes: options.maxTotalBytes ?? KEPT_ANSWERS_MAX_BYTES,
    maxPerWorker: options.maxPerWorker ?? KEPT_ANSWERS_PER_WORKER,
  });
  return {
    record(workerId, digest, hooks) {
      if (digest === undefined) return undefined;
      const entry: Entry = {
        workerId,
        key: `${workerId} ${digest}`,
        hooks,
        chunks: [],
        bytes: 0,
        recording: true,
        ended: false,
        orphaned: false,
        released: false,
        sent: 0,
        waiting: false,
      };
      return {
        begin: (status, headers) => pool.begin(entry, status, headers),
        write: (chunk) => pool.write(entry, chunk),
        end: (whole) => pool.end(entry, whole),
        drop: () => pool.letGo(entry),
        orphan: () => pool.orphan(entry),
      };
    },

    take(workerId, digest) {
      const entry = digest === undefined ? undefined : pool.kept.get(`${workerId} ${digest}`);
      if (!entry) return undefined;
      pool.kept.delete(entry.key);
      // The re-ask has as long to take it all as it was kept.
      pool.expire(entry, pool.limits.keepMs);
      return (response) => {
        entry.follower = response;
        response.once('close', () => pool.letGo(entry));
        pool.pump(entry);
      };
    },

    close() {
      pool.closing = true;
      for (const entry of [...pool.orphans]) pool.letGo(entry);
    },
  };
}
