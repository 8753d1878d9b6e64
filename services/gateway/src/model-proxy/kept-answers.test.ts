import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createKeptAnswers } from './kept-answers.js';

/** What a re-ask was answered: its head, its bytes, and whether it ended or was cut off. */
class Answered extends EventEmitter {
  status: number | undefined;
  body = '';
  ended = false;
  destroyed = false;
  writeHead(status: number) {
    this.status = status;
    return this;
  }
  write(chunk: Buffer) {
    this.body += chunk.toString();
    return true;
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
const answered = () => new Answered();
const asResponse = (a: Answered) => a as unknown as ServerResponse;
const chunk = (text: string) => Buffer.from(text);

describe('kept answers', () => {
  afterEach(() => vi.useRealTimers());

  it('an orphaned answer read to its end is given whole to one re-ask of the same worker, then no more', () => {
    const kept = createKeptAnswers();
    const recording = kept.record('wrk_a', 'digest')!;
    expect(recording.begin(200, { 'content-type': 'text/event-stream' })).toBe(true);
    recording.write(chunk('one '));
    expect(recording.orphan()).toBe(true);
    recording.write(chunk('two'));
    recording.end();
    expect(kept.take('wrk_b', 'digest')).toBeUndefined();
    const reAsk = answered();
    kept.take('wrk_a', 'digest')!(asResponse(reAsk));
    expect(reAsk).toMatchObject({ status: 200, body: 'one two', ended: true });
    expect(kept.take('wrk_a', 'digest')).toBeUndefined();
  });

  it('an answer its agent read whole, or one never recorded, is not kept', () => {
    const kept = createKeptAnswers();
    const recording = kept.record('wrk_a', 'digest')!;
    recording.begin(200, {});
    recording.write(chunk('all of it'));
    recording.end();
    expect(kept.take('wrk_a', 'digest')).toBeUndefined();
    expect(kept.record('wrk_a', undefined)).toBeUndefined();
    expect(kept.take('wrk_a', undefined)).toBeUndefined();
  });

  it('a re-ask while the answer still comes follows it to its end; one that broke off is cut off', () => {
    const kept = createKeptAnswers();
    const whole = kept.record('wrk_a', 'whole')!;
    whole.begin(200, {});
    whole.write(chunk('so far'));
    whole.orphan();
    const follower = answered();
    kept.take('wrk_a', 'whole')!(asResponse(follower));
    expect(follower.body).toBe('so far');
    whole.write(chunk(', the rest'));
    whole.end();
    expect(follower).toMatchObject({ body: 'so far, the rest', ended: true, destroyed: false });

    const broken = kept.record('wrk_a', 'broken')!;
    broken.begin(200, {});
    broken.orphan();
    const cutOff = answered();
    kept.take('wrk_a', 'broken')!(asResponse(cutOff));
    broken.drop();
    expect(cutOff).toMatchObject({ ended: false, destroyed: true });
  });

  it('a re-ask that comes before the answer began gets its head when it comes', () => {
    const kept = createKeptAnswers();
    const recording = kept.record('wrk_a', 'digest')!;
    recording.orphan();
    const early = answered();
    kept.take('wrk_a', 'digest')!(asResponse(early));
    recording.begin(201, {});
    recording.write(chunk('late'));
    recording.end();
    expect(early).toMatchObject({ status: 201, body: 'late', ended: true });
  });

  it('an answer past its size, a worker past its count, a replica past its bytes: not kept', () => {
    const kept = createKeptAnswers({ maxAnswerBytes: 8, maxPerWorker: 1, maxTotalBytes: 12 });
    const large = kept.record('wrk_a', 'large')!;
    large.begin(200, {});
    large.orphan();
    expect(large.write(chunk('123456789'))).toBe(false);
    expect(kept.take('wrk_a', 'large')).toBeUndefined();

    const first = kept.record('wrk_a', 'first')!;
    first.begin(200, {});
    expect(first.orphan()).toBe(true);
    const second = kept.record('wrk_a', 'second')!;
    second.begin(200, {});
    expect(second.orphan()).toBe(false);

    first.write(chunk('12345678'));
    const other = kept.record('wrk_b', 'other')!;
    other.begin(200, {});
    expect(other.write(chunk('12345'))).toBe(false);
  });

  it('a kept answer nobody asks for again is let go after its time', () => {
    vi.useFakeTimers();
    const kept = createKeptAnswers({ keepMs: 1000 });
    const recording = kept.record('wrk_a', 'digest')!;
    recording.begin(200, {});
    recording.orphan();
    recording.end();
    vi.advanceTimersByTime(1001);
    expect(kept.take('wrk_a', 'digest')).toBeUndefined();
  });
});
