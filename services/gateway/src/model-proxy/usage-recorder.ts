import { counter } from '@svc/service-kit';
import type { ModelUsageLedger } from '@svc/bus';
import { costOf, type IncomingEvent, type MeasuredTokens, type ModelApi, type ModelUsage } from '@svc/protocol';

/** How long a worker's usage may wait to be added to its totals, when it has no budget. */
const FLUSH_AFTER_MS = 250;

interface Pending {
  requests: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cost_usd: number;
  measured: boolean;
  timer: NodeJS.Timeout | undefined;
}

export interface UsageRecorder {
  /**
   * Counts one forwarded response (its tokens, when it carried any). A worker with a budget has
   * its totals brought up to date at once (the next request is checked against them); one
   * without has its usage gathered for up to 250 ms and added in one write, with one event.
   * For a worker with a budget it resolves once the write holding this usage has landed (a
   * failed write goes to `onError`): only then may the request's reservation go.
   */
  add(workerId: string, api: ModelApi, tokens: MeasuredTokens | undefined, budgeted: boolean): Promise<void>;
  /** Resolves once this replica's writes of the worker's usage so far have landed. */
  written(workerId: string): Promise<void>;
  /** Writes everything gathered (at shutdown). */
  close(): Promise<void>;
}

const modelRequests = counter({
  name: 'svc_model_proxy_requests_total',
  help: 'Model requests through the proxy, by worker and API.',
  labelNames: ['worker_id', 'api'],
});
const modelTokens = counter({
  name: 'svc_model_proxy_tokens_total',
  help: 'Tokens the model proxy measured in the answers, by worker, API and kind (input: with the cache reads and writes; output; cache_read).',
  labelNames: ['worker_id', 'api', 'kind'],
});

/**
 * Adds metered usage to the shared totals (`svc_model_usage`) and records each addition as a
 * `progress` event with the worker's new totals. Writes for one worker go one after another, so
 * its events carry totals in order.
 */
export function createUsageRecorder(options: {
  ledger: ModelUsageLedger;
  record(workerId: string, event: IncomingEvent): Promise<unknown>;
  onError(err: unknown, workerId: string): void;
}): UsageRecorder {
  const pending = new Map<string, Pending>();
  const writing = new Map<string, Promise<void>>();

  async function write(workerId: string, delta: Pending): Promise<void> {
    const usage: ModelUsage = await options.ledger.update(workerId, (current) => ({
      ...current,
      requests: current.requests + delta.requests,
      input_tokens: current.input_tokens + delta.input_tokens,
      output_tokens: current.output_tokens + delta.output_tokens,
      cache_read_tokens: current.cache_read_tokens + delta.cache_read_tokens,
      cost_usd: current.cost_usd + delta.cost_usd,
    }));
    if (!delta.measured) return;
    await options.record(workerId, {
      type: 'progress',
      // The totals' request count is unique per worker: a repeated write is stored once.
      uid: `model-proxy:${usage.requests}`,
      ts: new Date().toISOString(),
      data: {
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cache_read_tokens: usage.cache_read_tokens,
        cost_usd: usage.cost_usd,
        measured_by: 'model_proxy',
      },
    });
  }

  function flush(workerId: string): Promise<void> {
    const delta = pending.get(workerId);
    if (!delta) return writing.get(workerId) ?? Promise.resolve();
    clearTimeout(delta.timer);
    pending.delete(workerId);
    const previous = writing.get(workerId) ?? Promise.resolve();
    const next = previous.then(() => write(workerId, delta)).catch((err: unknown) => options.onError(err, workerId));
    writing.set(workerId, next);
    void next.finally(() => {
      if (writing.get(workerId) === next) writing.delete(workerId);
    });
    return next;
  }

  return {
    add(workerId, api, tokens, budgeted) {
      let delta = pending.get(workerId);
      if (!delta) {
        delta = { requests: 0, input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cost_usd: 0, measured: false, timer: undefined };
        pending.set(workerId, delta);
      }
      delta.requests++;
      modelRequests.inc({ worker_id: workerId, api });
      if (tokens) {
        modelTokens.inc({ worker_id: workerId, api, kind: 'input' }, tokens.input_tokens);
        modelTokens.inc({ worker_id: workerId, api, kind: 'output' }, tokens.output_tokens);
        modelTokens.inc({ worker_id: workerId, api, kind: 'cache_read' }, tokens.cache_read_tokens);
        delta.measured = true;
        delta.input_tokens += tokens.input_tokens;
        delta.output_tokens += tokens.output_tokens;
        delta.cache_read_tokens += tokens.cache_read_tokens;
        delta.cost_usd += costOf(api, tokens);
      }
      if (budgeted) return flush(workerId);
      delta.timer ??= setTimeout(() => void flush(workerId), FLUSH_AFTER_MS);
      return Promise.resolve();
    },
    written: (workerId) => writing.get(workerId) ?? Promise.resolve(),
    async close() {
      await Promise.all([...pending.keys()].map((workerId) => flush(workerId)));
      await Promise.all([...writing.values()]);
    },
  };
}
