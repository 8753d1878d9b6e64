import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { resumeReason } from './routes/event-stream.js';
import { checkStreamLimits, createConcurrencyCap, createSocketFlow, DEFAULT_STREAM_LIMITS, type StreamLimits } from './stream-limits.js';

const KiB = 1024;
const limits: StreamLimits = {
  ...DEFAULT_STREAM_LIMITS,
  streamLowWaterBytes: 10 * KiB,
  streamHighWaterBytes: 100 * KiB,
  streamMaxBufferedBytes: 1000 * KiB,
  streamStallMs: 5000,
};

describe('stream limits — a cap on open connections per key', () => {
  it('gives out max places per key, refuses the next, and takes a place back once (a second release is harmless)', () => {
    const cap = createConcurrencyCap(2);
    const first = cap.claim('alice')!;
    const second = cap.claim('alice')!;
    expect(cap.claim('alice')).toBeUndefined();
    expect(cap.claim('bob')).toBeDefined();
    first();
    first();
    expect(cap.held('alice')).toBe(1);
    expect(cap.claim('alice')).toBeDefined();
    expect(cap.claim('alice')).toBeUndefined();
    second();
    expect(cap.held('alice')).toBe(1);
  });
});

describe('stream limits — settings', () => {
  it('the defaults are in order; marks out of order are refused at start, naming the variables', () => {
    expect(checkStreamLimits(DEFAULT_STREAM_LIMITS)).toBe(DEFAULT_STREAM_LIMITS);
    expect(() => checkStreamLimits({ ...limits, streamLowWaterBytes: limits.streamHighWaterBytes })).toThrow(
      /SVC_STREAM_LOW_WATER_BYTES .* below SVC_STREAM_HIGH_WATER_BYTES/,
    );
    expect(() => checkStreamLimits({ ...limits, streamHighWaterBytes: limits.streamMaxBufferedBytes })).toThrow(
      /SVC_STREAM_HIGH_WATER_BYTES .* below SVC_STREAM_MAX_BUFFERED_BYTES/,
    );
  });

  it('a close reason says where to resume and why, within the 123 bytes a close frame allows', () => {
    expect(JSON.parse(resumeReason(42n))).toEqual({ resume_after_id: '42' });
    expect(JSON.parse(resumeReason(42n, 'the viewer is not reading: nothing read for 20 s'))).toEqual({
      resume_after_id: '42',
      reason: 'the viewer is not reading: nothing read for 20 s',
    });
    const long = resumeReason(9_223_372_036_854_775_807n, 'x'.repeat(500));
    expect(Buffer.byteLength(long)).toBeLessThanOrEqual(123);
    expect(JSON.parse(long)).toMatchObject({ resume_after_id: '9223372036854775807' });
  });
});

describe('stream limits — flow control of one viewer', () => {
  let socket: { bufferedAmount: number };
  let resumed: number;
  let stalled: string[];
  beforeEach(() => {
    vi.useFakeTimers();
    socket = { bufferedAmount: 0 };
    resumed = 0;
    stalled = [];
  });
  afterEach(() => vi.useRealTimers());

  const flowOf = () =>
    createSocketFlow(socket, limits, { onResume: () => void resumed++, onStalled: (why) => void stalled.push(why), pollMs: 50, now: () => Date.now() });

  it('writes on below the high-water mark; above it, pauses until the viewer has read down to the low-water mark', async () => {
    const flow = flowOf();
    socket.bufferedAmount = 100 * KiB;
    flow.sent();
    expect(flow.paused).toBe(false);
    await flow.writable();

    socket.bufferedAmount = 100 * KiB + 1;
    flow.sent();
    expect(flow.paused).toBe(true);
    let writable = false;
    void flow.writable().then(() => (writable = true));
    socket.bufferedAmount = 50 * KiB;
    await vi.advanceTimersByTimeAsync(200);
    expect(writable).toBe(false);
    socket.bufferedAmount = 10 * KiB;
    await vi.advanceTimersByTimeAsync(50);
    expect(writable).toBe(true);
    expect(flow.paused).toBe(false);
    expect(resumed).toBe(1);
    expect(stalled).toEqual([]);
  });

  it('a paused viewer that reads nothing for the stall time is given up on; one that reads slowly is not', async () => {
    const slow = flowOf();
    socket.bufferedAmount = 500 * KiB;
    slow.sent();
    // Reads 1 KiB every 100 ms: 20 s of that is progress all along.
    for (let elapsed = 0; elapsed < 20_000; elapsed += 100) {
      socket.bufferedAmount -= KiB;
      await vi.advanceTimersByTimeAsync(100);
    }
    expect(stalled).toEqual([]);
    expect(slow.paused).toBe(true);
    slow.stop();

    const stopped = flowOf();
    socket.bufferedAmount = 500 * KiB;
    stopped.sent();
    await vi.advanceTimersByTimeAsync(4900);
    expect(stalled).toEqual([]);
    await vi.advanceTimersByTimeAsync(200);
    expect(stalled).toEqual(['nothing read for 5 s']);
    expect(stopped.paused).toBe(false);
    // Given up once: the poll has stopped, and what waited to write is let go (to find the stream ended).
    await vi.advanceTimersByTimeAsync(10_000);
    expect(stalled).toHaveLength(1);
    await stopped.writable();
  });

  it('past the hard bound the viewer is given up on at once, even in the middle of a page', () => {
    const flow = flowOf();
    socket.bufferedAmount = 200 * KiB;
    flow.sent();
    expect(flow.paused).toBe(true);
    socket.bufferedAmount = 1000 * KiB + 1;
    flow.sent();
    expect(stalled).toEqual(['more than 1000 KiB waiting']);
    flow.sent();
    expect(stalled).toHaveLength(1);
  });

  it('stopping lets go of what waits to write and ends the polling', async () => {
    const flow = flowOf();
    socket.bufferedAmount = 200 * KiB;
    const waiting = flow.writable();
    expect(flow.paused).toBe(true);
    flow.stop();
    await waiting;
    await vi.advanceTimersByTimeAsync(60_000);
    expect(stalled).toEqual([]);
    expect(resumed).toBe(0);
  });
});
