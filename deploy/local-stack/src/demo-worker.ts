import { randomUUID } from 'node:crypto';
import { requestJson, type NatsConnection } from '@svc/bus';
import { subjects, type CreateWorkerResultType, type IncomingEvent } from '@svc/protocol';
import type { Logger } from '@svc/service-kit';

export interface DemoWorker {
  workerId: string;
  stop(): Promise<void>;
}

type Step = Pick<IncomingEvent, 'type' | 'data'>;

/** One pass of a plausible agent turn: every widget a viewer can show. */
const SCRIPT: Step[] = [
  { type: 'system', data: { level: 'info', subtype: 'init', message: 'demo agent started (no model, no API key: a script)' } },
  { type: 'assistant', data: { text: 'I will look at the repository first.' } },
  { type: 'tool_use', data: { tool_use_id: 'toolu_demo_1', name: 'Bash', input: { command: 'ls -la' } } },
  { type: 'tool_result', data: { tool_use_id: 'toolu_demo_1', content: 'README.md\npackage.json\nsrc/', is_error: false } },
  { type: 'progress', data: { input_tokens: 1200, output_tokens: 80, cost_usd: 0.004 } },
  { type: 'assistant', data: { text: 'The tests live in src/. Everything looks in order.' } },
  { type: 'result', data: { subtype: 'success', is_error: false, num_turns: 2, duration_ms: 4200 } },
];

/**
 * A demo worker for the local stack: registered like a real one, it posts a scripted agent turn
 * to the gateway with its own worker token, one event every `intervalMs`, again and again — so
 * a newcomer has events to look at without any agent or API key. (The bundled demo agent under
 * a real sidecar arrives with the sessions issue.)
 */
export async function startDemoWorker(options: { nc: NatsConnection; gatewayUrl: string; owner: string; logger: Logger; intervalMs?: number }): Promise<DemoWorker> {
  const { worker_id: workerId, token } = await requestJson<CreateWorkerResultType>(options.nc, subjects.rpc.createWorker, { owner: options.owner });
  await requestJson(options.nc, subjects.rpc.setWorkerStatus, { worker_id: workerId, status: 'running' });
  const bootId = randomUUID().slice(0, 8);
  let n = 0;
  let stopped = false;
  const timer = setInterval(() => {
    const step = SCRIPT[n % SCRIPT.length]!;
    const event = { ...step, uid: `${bootId}:${n++}`, ts: new Date().toISOString() };
    fetch(`${options.gatewayUrl}/v1/workers/${workerId}/sdk-events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(event),
    })
      .then((response) => {
        if (response.status !== 202 && !stopped) options.logger.warn({ status: response.status }, 'demo worker: event refused');
      })
      .catch((err: unknown) => {
        if (!stopped) options.logger.warn({ err }, 'demo worker: gateway unreachable');
      });
  }, options.intervalMs ?? 1000);
  return {
    workerId,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await requestJson(options.nc, subjects.rpc.setWorkerStatus, { worker_id: workerId, status: 'stopped' }).catch(() => {});
    },
  };
}
