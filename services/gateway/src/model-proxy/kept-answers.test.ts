import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createKeptAnswers, type RecordingHooks } from './kept-answers.js';

/** What a re-ask was answered: its head, its bytes, and whether it ended or was cut off; `full` holds its writes back. */
class Answered extends EventEmitter {
  status: number | undefined;
  headersSent = false;
  body = '';
  ended = false;
  destroyed = false;
  full = false;
  writeHead(status: number) {
    this.status = status;
    this.headersSent = true;
    return this;
  }
  write(chunk: Buffer) {
    this.body += chunk.toString();
    return !this.full;
  }
  drain() {
    this.full = false;
    this.emit('drain');
  }
  end() {
    this.ended = true;
    this.emit('close');
  }
  destroy() {
    this.destroyed = true;
    this.emit('close');
  }
}
const asResponse = (a: Answered) => a as unknown as ServerResponse;
const chunk = (text: string) => Buffer.from(text);
/** Hooks that count what the exchange was told. */
const hooks = () => {
  const told = { abandoned: 0, released: 0 };
  const given: RecordingHooks = { abandon: () => told.abandoned++, released: () => told.released++ };
  return { told, given };
};

describe('kept answers', () => {
  afterEach(() => vi.useRealTimers());

  it('an orphaned whole answer is given to one re-ask of the same worker, then no more, and let go once it has it all', () => {
    const kept = createKeptAnswers();
    const { told, given } = hooks();
    const recording = kept.record('wrk_a', 'digest', given)!;
    expect(recording.begin(200, { 'content-type': 'text/event-stream' })).toBe(true);
    recording.write(chunk('one '));
    expect(recording.orphan()).toBe(true);
    recording.write(chunk('two'));
    recording.end(true);
    expect(kept.take('wrk_b', 'digest')).toBeUndefined();
    const reAsk = new Answered();
    kept.take('wrk_a', 'digest')!(asResponse(reAsk));
    expect(reAsk).toMatchObject({ status: 200, body: 'one two', ended: true, destroyed: false });
    expect(kept.take('wrk_a', 'digest')).toBeUndefined();
    expect(told).toEqual({ abandoned: 0, released: 1 });
  });

  it('an answer its agent read whole, one not whole, or one never recorded, is not kept', () => {
    const kept = createKeptAnswers();
    const read = kept.record('wrk_a', 'read', hooks().given)!;
    read.begin(200, {});
    read.write(chunk('all of it'));
    read.end(true);
    expect(kept.take('wrk_a', 'read')).toBeUndefined();
    // A stream that failed after its 200: the agent asks the model again.
    const failed = kept.record('wrk_a', 'failed', hooks().given)!;
    failed.begin(200, {});
    failed.orphan();
    failed.end(false);
    expect(kept.take('wrk_a', 'failed')).toBeUndefined();
    expect(kept.record('wrk_a', undefined, hooks().given)).toBeUndefined();
    expect(kept.take('wrk_a', undefined)).toBeUndefined();
  });

  it('a re-ask while the answer still comes follows it at its own pace to the end; one whose answer broke off is cut off', () => {
    const kept = createKeptAnswers();
    const whole = kept.record('wrk_a', 'whole', hooks().given)!;
    whole.begin(200, {});
    whole.write(chunk('so far'));
    whole.orphan();
    const follower = new Answered();
    follower.full = true;
    kept.take('wrk_a', 'whole')!(asResponse(follower));
    expect(follower.body).toBe('so far');
    whole.write(chunk(', the rest'));
    whole.end(true);
    // Held back until it drains.
    expect(follower).toMatchObject({ body: 'so far', ended: false });
    follower.drain();
    expect(follower).toMatchObject({ body: 'so far, the rest', ended: true, destroyed: false });

    const broken = kept.record('wrk_a', 'broken', hooks().given)!;
    broken.begin(200, {});
    broken.orphan();
    const cutOff = new Answered();
    kept.take('wrk_a', 'broken')!(asResponse(cutOff));
    broken.drop();
    expect(cutOff).toMatchObject({ ended: false, destroyed: true });
  });

  it('a re-ask that goes away before the answer ends: the upstream is abandoned (nobody will read it)', () => {
    const kept = createKeptAnswers();
    const { told, given } = hooks();
    const recording = kept.record('wrk_a', 'digest', given)!;
    recording.begin(200, {});
    recording.orphan();
    const reAsk = new Answered();
    kept.take('wrk_a', 'digest')!(asResponse(reAsk));
    reAsk.destroy();
    expect(told).toEqual({ abandoned: 1, released: 1 });
  });

  it('a re-ask that comes before the answer began gets its head when it comes', () => {
    const kept = createKeptAnswers();
    const recording = kept.record('wrk_a', 'digest', hooks().given)!;
    recording.orphan();
    const early = new Answered();
    kept.take('wrk_a', 'digest')!(asResponse(early));
    recording.begin(201, {});
    recording.write(chunk('late'));
    recording.end(true);
    expect(early).toMatchObject({ status: 201, body: 'late', ended: true });
  });

  it('past an answer’s size, a worker’s count or bytes, or the replica’s bytes: not kept, and an orphan is abandoned at once', () => {
    const kept = createKeptAnswers({ maxAnswerBytes: 8, maxPerWorker: 1, maxWorkerBytes: 10, maxTotalBytes: 12 });
    const large = hooks();
    const tooLarge = kept.record('wrk_a', 'large', large.given)!;
    tooLarge.begin(200, {});
    tooLarge.orphan();
    tooLarge.write(chunk('123456789'));
    expect(kept.take('wrk_a', 'large')).toBeUndefined();
    expect(large.told).toEqual({ abandoned: 1, released: 1 });

    const first = kept.record('wrk_a', 'first', hooks().given)!;
    first.begin(200, {});
    expect(first.orphan()).toBe(true);
    // The worker keeps one at a time; the same request again does not replace it.
    const second = kept.record('wrk_a', 'second', hooks().given)!;
    second.begin(200, {});
    expect(second.orphan()).toBe(false);
    expect(kept.record('wrk_a', 'first', hooks().given)!.orphan()).toBe(false);

    first.write(chunk('12345678'));
    // wrk_a holds 8 of its 10 bytes: 3 more are past them.
    const more = kept.record('wrk_a', 'more', hooks().given)!;
    more.begin(200, {});
    more.write(chunk('123'));
    more.orphan();
    expect(kept.take('wrk_a', 'more')).toBeUndefined();
    // The replica holds 8 of its 12: another worker's 5 are past them.
    const other = kept.record('wrk_b', 'other', hooks().given)!;
    other.begin(200, {});
    other.write(chunk('12345'));
    other.orphan();
    expect(kept.take('wrk_b', 'other')).toBeUndefined();
  });

  it('a kept answer nobody asks for again is let go after its time, counted from its end; closing lets every orphan go', () => {
    vi.useFakeTimers();
    const kept = createKeptAnswers({ keepMs: 1000 });
    const recording = kept.record('wrk_a', 'digest', hooks().given)!;
    recording.begin(200, {});
    recording.orphan();
    vi.advanceTimersByTime(5000);
    recording.end(true);
    vi.advanceTimersByTime(999);
    expect(kept.take('wrk_a', 'digest')).toBeDefined();

    const late = kept.record('wrk_a', 'late', hooks().given)!;
    late.begin(200, {});
    late.orphan();
    late.end(true);
    vi.advanceTimersByTime(1001);
    expect(kept.take('wrk_a', 'late')).toBeUndefined();

    const reading = hooks();
    const stillComing = kept.record('wrk_b', 'coming', reading.given)!;
    stillComing.begin(200, {});
    stillComing.orphan();
    kept.close();
    expect(reading.told).toEqual({ abandoned: 1, released: 1 });
    const after = kept.record('wrk_b', 'after', hooks().given)!;
    expect(after.orphan()).toBe(false);
  });
});
