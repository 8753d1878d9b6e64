import type { Readable, Writable } from 'node:stream';

/**
 * Passes an answer to the agent chunk by chunk as it comes (an SSE stream is not held back),
 * showing each chunk to `observe` first (the meter). With backpressure: when the agent's
 * connection holds back (`write` returns false) the answer is paused until it drains, so an
 * agent that stops reading makes the upstream wait rather than the gateway buffer the answer.
 * Once the agent has gone the answer is only observed, as fast as it comes (it may be read on,
 * to be kept for a re-ask: kept-answers.ts).
 */
export function relayAnswer(answer: Readable, agent: Writable, observe: (chunk: Buffer) => void): void {
  answer.on('data', (chunk: Buffer) => {
    observe(chunk);
    if (agent.destroyed || agent.write(chunk)) return;
    answer.pause();
    const resume = () => {
      agent.off('drain', resume);
      agent.off('close', resume);
      answer.resume();
    };
    agent.once('drain', resume);
    agent.once('close', resume);
  });
}
