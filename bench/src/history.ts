import type { CreateWorkerResultType, IncomingEvent } from '@svc/protocol';
import { post, type Pipeline } from './pipeline.js';

/** A plausible mix: text, tool calls and their results, progress, system lines. */
function eventAt(n: number): Omit<IncomingEvent, 'uid' | 'ts'> {
  switch (n % 5) {
    case 0:
      return { type: 'assistant', data: { text: `Step ${n}: I read the failing test and the parser; the field is optional, so the raw line has to be kept.` } };
    case 1:
      return { type: 'tool_use', data: { tool_use_id: `t${n}`, name: 'Bash', input: { command: `npm test -- --grep case-${n}` } } };
    case 2:
      return {
        type: 'tool_result',
        data: {
          tool_use_id: `t${n - 1}`,
          content: `PASS src/parser.test.ts\n  ✓ keeps the raw line (${n} ms)\n  ✓ maps the fields\nTests: 2 passed`,
          is_error: false,
        },
      };
    case 3:
      return { type: 'progress', data: { input_tokens: n * 10, output_tokens: n, cost_usd: n / 10_000 } };
    default:
      return { type: 'system', data: { level: 'info', message: `checkpoint ${n}` } };
  }
}

/** A new worker with a stored history of `count` such events (posted as the worker, then drained into the store). */
export async function workerWithHistory(pipeline: Pipeline, count: number): Promise<CreateWorkerResultType> {
  const worker = await pipeline.createWorker();
  const started = Date.now();
  await postHistory(pipeline, worker, count);
  await pipeline.drained();
  process.stdout.write(`stored ${count} events in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  return worker;
}

/** Posts a history of `count` such events as the worker (batches of 500, four at a time), uids `e0…`. */
async function postHistory(pipeline: Pipeline, worker: CreateWorkerResultType, count: number): Promise<void> {
  const batches = Array.from({ length: Math.ceil(count / 500) }, (_, b) => b);
  for (let i = 0; i < batches.length; i += 4) {
    await Promise.all(
      batches.slice(i, i + 4).map((b) =>
        post(pipeline, worker, {
          events: Array.from({ length: Math.min(500, count - b * 500) }, (_, k) => ({
            ...eventAt(b * 500 + k),
            uid: `e${b * 500 + k}`,
            ts: new Date().toISOString(),
          })),
        }),
      ),
    );
  }
}
