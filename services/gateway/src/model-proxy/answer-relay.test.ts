import { PassThrough, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { relayAnswer } from './answer-relay.js';

/** An agent's connection that takes chunks only when `drain()` is called (a reader that stopped). */
function stalledAgent(highWaterMark: number) {
  const taken: Buffer[] = [];
  let pending: Array<() => void> = [];
  const agent = new Writable({
    highWaterMark,
    write(chunk: Buffer, _encoding, done) {
      taken.push(chunk);
      pending.push(done);
    },
  });
  return {
    agent,
    taken,
    drain() {
      const callbacks = pending;
      pending = [];
      for (const done of callbacks) done();
    },
  };
}

describe('model proxy answer relay — backpressure', () => {
  it('an agent that stops reading pauses the answer; it resumes when the agent drains, and every chunk arrives in order, observed once', async () => {
    const answer = new PassThrough({ highWaterMark: 16 });
    const { agent, taken, drain } = stalledAgent(8);
    const observed: string[] = [];
    relayAnswer(answer, agent, (chunk) => observed.push(chunk.toString()));

    answer.write('0123456789');
    await new Promise((resolve) => setImmediate(resolve));
    // The agent's buffer is past its mark: the answer is paused, the rest stays upstream.
    expect(answer.isPaused()).toBe(true);
    for (const chunk of ['a', 'b', 'c']) answer.write(chunk);
    await new Promise((resolve) => setImmediate(resolve));
    expect(observed).toEqual(['0123456789']);

    drain();
    await new Promise((resolve) => setImmediate(resolve));
    expect(answer.isPaused()).toBe(false);
    for (let turn = 0; turn < 4; turn++) {
      drain();
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(observed.join('')).toBe('0123456789abc');
    expect(Buffer.concat(taken).toString()).toBe('0123456789abc');
  });

  it('an agent that keeps up never pauses the answer', async () => {
    const answer = new PassThrough();
    const received: Buffer[] = [];
    const agent = new Writable({
      write(chunk: Buffer, _encoding, done) {
        received.push(chunk);
        done();
      },
    });
    let paused = false;
    answer.on('pause', () => (paused = true));
    relayAnswer(answer, agent, () => undefined);
    for (let i = 0; i < 100; i++) answer.write(Buffer.alloc(100, i));
    answer.end();
    await new Promise((resolve) => answer.on('end', resolve));
    expect(paused).toBe(false);
    expect(Buffer.concat(received).length).toBe(10_000);
  });
});
