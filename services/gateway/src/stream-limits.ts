import { integerSetting, readConfig, type ConfigOf } from '@svc/service-kit';

const KiB = 1024;
const MiB = 1024 * KiB;

/**
 * How far the gateway lets a viewer's stream and a caller's open connections go
 * (docs/event-stream.md "Bounds"); the gateway's settings take these in (docs/configuration.md).
 */
export const streamLimitSettings = {
  /** WebSocket streams one person (their token's `sub`, admins too) may hold open on one gateway. */
  maxStreamsPerUser: integerSetting('SVC_MAX_STREAMS_PER_USER', { default: 50, min: 1 }),
  /** Long polls (`GET …/control/pending` with `wait_ms`) one worker may hold open on one gateway (its sidecar holds one). */
  maxLongPollsPerWorker: integerSetting('SVC_MAX_LONG_POLLS_PER_WORKER', { default: 8, min: 1 }),
  /** A stream stops reading the store (and passes live events by) while more than this waits to be sent to its viewer. */
  streamHighWaterBytes: integerSetting('SVC_STREAM_HIGH_WATER_BYTES', { default: 1 * MiB, min: 16 * KiB }),
  /** ...and goes on once the viewer has read it down to this. */
  streamLowWaterBytes: integerSetting('SVC_STREAM_LOW_WATER_BYTES', { default: 256 * KiB, min: 0 }),
  /** More than this waiting for a viewer closes its stream at once (1008). */
  streamMaxBufferedBytes: integerSetting('SVC_STREAM_MAX_BUFFERED_BYTES', { default: 8 * MiB, min: 64 * KiB }),
  /** A paused viewer that reads nothing for this long is closed (1008). */
  streamStallMs: integerSetting('SVC_STREAM_STALL_MS', { default: 20_000, min: 100 }),
};

export type StreamLimits = ConfigOf<typeof streamLimitSettings>;

export const DEFAULT_STREAM_LIMITS: StreamLimits = readConfig(streamLimitSettings, {});

/** The marks must be in order (low < high < hard bound); a configuration that is not is refused at start. */
export function checkStreamLimits(limits: StreamLimits): StreamLimits {
  if (limits.streamLowWaterBytes >= limits.streamHighWaterBytes)
    throw new Error(`SVC_STREAM_LOW_WATER_BYTES (${limits.streamLowWaterBytes}) must be below SVC_STREAM_HIGH_WATER_BYTES (${limits.streamHighWaterBytes})`);
  if (limits.streamHighWaterBytes >= limits.streamMaxBufferedBytes)
    throw new Error(
      `SVC_STREAM_HIGH_WATER_BYTES (${limits.streamHighWaterBytes}) must be below SVC_STREAM_MAX_BUFFERED_BYTES (${limits.streamMaxBufferedBytes})`,
    );
  return limits;
}

/** Places for open connections, at most `max` per key (a user, a worker); one gateway's, counted in memory. */
export interface ConcurrencyCap {
  readonly max: number;
  /** Takes one of `key`'s places: the function that gives it back (once; again is harmless), or undefined when all are taken. */
  claim(key: string): (() => void) | undefined;
  /** The places `key` holds. */
  held(key: string): number;
}

export function createConcurrencyCap(max: number): ConcurrencyCap {
  const counts = new Map<string, number>();
  return {
    max,
    claim(key) {
      const count = counts.get(key) ?? 0;
      if (count >= max) return undefined;
      counts.set(key, count + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const left = (counts.get(key) ?? 1) - 1;
        if (left > 0) counts.set(key, left);
        else counts.delete(key);
      };
    },
    held: (key) => counts.get(key) ?? 0,
  };
}

/** What a stream's flow control needs of its socket. */
export interface FlowSocket {
  /** Bytes handed to the socket and not yet taken by the kernel (`ws`'s `bufferedAmount`). */
  readonly bufferedAmount: number;
}

export interface SocketFlow {
  /** True while the viewer is behind: nothing more should be sent until it has read down to the low-water mark. */
  readonly paused: boolean;
  /** Something was sent: pauses above the high-water mark, gives up past the hard bound. */
  sent(): void;
  /** Resolves once sending may go on (at once unless paused; also when the flow is stopped). */
  writable(): Promise<void>;
  /** Stops watching (the stream has ended). */
  stop(): void;
}

export interface SocketFlowHandlers {
  /** The viewer has read down to the low-water mark. */
  onResume(): void;
  /** The viewer is not reading (`why`: past the hard bound, or nothing read for the stall time): close its stream. */
  onStalled(why: string): void;
  /** How often a paused stream looks at its buffer (default 50 ms). */
  pollMs?: number;
  now?: () => number;
}

/**
 * Flow control for one viewer: pauses while more than the high-water mark waits to be sent,
 * resumes at the low-water mark, and gives up on a viewer whose buffer passes the hard bound or
 * that reads nothing for the stall time while paused. A viewer that reads slowly makes progress
 * and is never given up on; one that stopped reading holds at most the high-water mark and what
 * the last page or live batch added.
 */
export function createSocketFlow(socket: FlowSocket, limits: StreamLimits, handlers: SocketFlowHandlers): SocketFlow {
  const now = handlers.now ?? Date.now;
  const pollMs = handlers.pollMs ?? 50;
  let paused = false;
  let stopped = false;
  let poll: ReturnType<typeof setInterval> | undefined;
  let waiters: Array<() => void> = [];
  let lastBuffered = 0;
  let lastProgressAt = 0;

  const release = () => {
    const waiting = waiters;
    waiters = [];
    for (const resolve of waiting) resolve();
  };

  const stop = () => {
    stopped = true;
    paused = false;
    clearInterval(poll);
    poll = undefined;
    release();
  };

  const giveUp = (why: string) => {
    stop();
    handlers.onStalled(why);
  };

  /** False when the flow was given up on. */
  const withinBound = (buffered: number) => {
    if (buffered <= limits.streamMaxBufferedBytes) return true;
    giveUp(`more than ${formatBytes(limits.streamMaxBufferedBytes)} waiting`);
    return false;
  };

  const look = () => {
    const buffered = socket.bufferedAmount;
    if (!withinBound(buffered)) return;
    if (buffered <= limits.streamLowWaterBytes) {
      paused = false;
      clearInterval(poll);
      poll = undefined;
      release();
      handlers.onResume();
      return;
    }
    if (buffered < lastBuffered) lastProgressAt = now();
    lastBuffered = buffered;
    if (now() - lastProgressAt >= limits.streamStallMs) giveUp(`nothing read for ${Math.round(limits.streamStallMs / 1000)} s`);
  };

  const check = () => {
    if (stopped) return;
    const buffered = socket.bufferedAmount;
    if (!withinBound(buffered) || paused || buffered <= limits.streamHighWaterBytes) return;
    paused = true;
    lastBuffered = buffered;
    lastProgressAt = now();
    poll = setInterval(look, pollMs);
  };

  return {
    get paused() {
      return paused;
    },
    sent: check,
    writable() {
      check();
      if (!paused) return Promise.resolve();
      return new Promise((resolve) => waiters.push(resolve));
    },
    stop,
  };
}

function formatBytes(bytes: number): string {
  return bytes >= MiB && bytes % MiB === 0 ? `${bytes / MiB} MiB` : bytes >= KiB && bytes % KiB === 0 ? `${bytes / KiB} KiB` : `${bytes} bytes`;
}
