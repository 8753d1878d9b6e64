import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newTraceparent, type CreateWorkerResultType } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '@svc/test-support/stand-ins';
import { StreamViewer } from '../readers.js';
import { startStack, type E2eStack } from '../stack.js';

/** OTLP span kinds. */
const SERVER = 2;
const PRODUCER = 4;
const CONSUMER = 5;

describe('traces: one POSTed event, followed from the sidecar to the WebSocket (every service its own process)', () => {
  let receiver: OtlpReceiver;
  let stack: E2eStack;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    stack = await startStack({
      env: { SVC_OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, SVC_OTEL_TRACES_SAMPLE_PERCENT: '100' },
      // Request lines are written at info: the gateway's carry the trace id.
      gatewayEnv: { SVC_LOG_LEVEL: 'info' },
    });
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
    await receiver?.close();
  }, 60_000);

  it('one trace: the gateway request → ingest → store append → announce → websocket send, each span the child of the one before across the NATS hops', async () => {
    const worker: CreateWorkerResultType = await stack.createWorker('tracing-user');
    const viewer = new StreamViewer('viewer', stack.gatewayUrl, await stack.userToken('tracing-user'));
    await viewer.watch([worker.worker_id]);
    // As the sidecar posts: its traceparent starts the trace (the sidecar itself exports nothing).
    const traceparent = newTraceparent();
    const [, traceId, sidecarSpanId] = traceparent.split('-');
    const response = await fetch(`${stack.gatewayUrl}/v1/workers/${worker.worker_id}/sdk-events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${worker.token}`, 'content-type': 'application/json', traceparent },
      body: JSON.stringify({ events: [{ type: 'assistant', uid: 'traced-1', ts: new Date().toISOString(), data: { text: 'followed' } }] }),
    });
    expect(response.status).toBe(202);
    await waitFor('the viewer has the event', () => viewer.received.count(worker.worker_id) === 1, 10_000);
    await viewer.disconnect();

    const names = ['POST /v1/workers/:id/sdk-events', 'ingest', 'store append', 'announce', 'websocket send'];
    const inTrace = () => receiver.spans().filter((span) => span.traceId === traceId);
    // The exporters send in batches, every few seconds.
    await waitFor('every span of the trace exported', () => names.every((name) => inTrace().some((span) => span.name === name)), 20_000);
    const byName = new Map<string, ReceivedSpan>();
    for (const name of names) {
      const spans = inTrace().filter((span) => span.name === name);
      expect(spans, name).toHaveLength(1);
      byName.set(name, spans[0]!);
    }
    const span = (name: string) => byName.get(name)!;
    const request = span('POST /v1/workers/:id/sdk-events');
    expect(request).toMatchObject({ service: 'gateway', kind: SERVER, parentSpanId: sidecarSpanId });
    expect(request.attributes['http.response.status_code']).toBe(202);
    expect(span('ingest')).toMatchObject({ service: 'event-ingest', kind: CONSUMER, parentSpanId: request.spanId });
    expect(span('store append')).toMatchObject({ service: 'event-ingest', parentSpanId: span('ingest').spanId });
    expect(span('announce')).toMatchObject({ service: 'event-ingest', kind: PRODUCER, parentSpanId: span('ingest').spanId });
    expect(span('websocket send')).toMatchObject({ service: 'gateway', kind: PRODUCER, parentSpanId: span('announce').spanId });
    expect(span('websocket send').attributes['svc.viewers']).toBe(1);
    expect(receiver.refused()).toEqual([]);

    // The gateway's request line names the trace (its log lines are written in batches: all of
    // them by the time it has stopped).
    const gateway = stack.processes().find((process) => process.service === 'gateway')!;
    await stack.stopGateway('stop');
    const requestLine = gateway
      .output()
      .split('\n')
      .find((line) => line.includes('"msg":"request"') && line.includes('sdk-events') && line.includes('"status":202'));
    expect(requestLine).toContain(`"trace_id":"${traceId}"`);
  }, 60_000);
});
