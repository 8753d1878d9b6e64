import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from './logger.js';
import {
  contextFromHeaders,
  contextOf,
  endSpan,
  startSpan,
  startTracing,
  traceHeaders,
  traceIdOf,
  tracesRequest,
  tracingEnabled,
  withContext,
} from './tracing.js';

function capture() {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk, _encoding, callback) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      callback();
    },
  });
  return { lines, destination };
}

const config = (endpoint: string | undefined, samplePercent = 100) => ({ otlpEndpoint: endpoint, standardOtlpEndpoint: undefined, samplePercent });

describe('tracing (OpenTelemetry over OTLP/HTTP)', () => {
  it('off without an endpoint: no spans, no headers, log lines without trace_id', async () => {
    const tracing = await startTracing('test', config(undefined));
    expect(tracingEnabled()).toBe(false);
    const { lines, destination } = capture();
    createLogger({ name: 'test', destination }).info({ a: 1 }, 'plain');
    expect(lines[0]).not.toHaveProperty('trace_id');
    expect(lines[0]).toMatchObject({ a: 1 });
    await tracing.shutdown();
  });

  it("on: a caller's traceparent is continued, carried on in headers, exported to the collector, and named by log lines written within it", async () => {
    const posts: string[] = [];
    const collector = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        posts.push(`${request.url} ${body}`);
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
    const tracing = await startTracing('test', config(`http://127.0.0.1:${(collector.address() as AddressInfo).port}/`));
    try {
      expect(tracingEnabled()).toBe(true);
      const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
      // Kept at 100 %: a caller's sampled trace, a new one; not a caller's unsampled one.
      expect(tracesRequest(`00-${traceId}-00f067aa0ba902b7-01`)).toBe(true);
      expect(tracesRequest(undefined)).toBe(true);
      expect(tracesRequest(`00-${traceId}-00f067aa0ba902b7-00`)).toBe(false);
      const parent = contextFromHeaders({ traceparent: `00-${traceId}-00f067aa0ba902b7-01` } as Record<string, string>, (h, name) => h[name]);
      const span = startSpan('work', { parent });
      const ctx = contextOf(span, parent);
      expect(traceIdOf(ctx)).toBe(traceId);
      expect(traceHeaders(ctx)['traceparent']).toMatch(new RegExp(`^00-${traceId}-${span.spanContext().spanId}-01$`));
      const { lines, destination } = capture();
      const logger = createLogger({ name: 'test', destination });
      withContext(ctx, () => logger.info({ step: 1 }, 'within'));
      logger.info('outside');
      expect(lines[0]).toMatchObject({ step: 1, trace_id: traceId });
      expect(lines[1]).not.toHaveProperty('trace_id');
      endSpan(span, new Error('it failed'));
    } finally {
      await tracing.shutdown();
      await new Promise<void>((resolve) => collector.close(() => resolve()));
    }
    // Shutting down sends what was buffered: the span, failed, to /v1/traces.
    expect(posts).toHaveLength(1);
    expect(posts[0]).toMatch(/^\/v1\/traces \{/);
    expect(posts[0]).toContain('"name":"work"');
    expect(posts[0]).toContain('it failed');
    expect(tracingEnabled()).toBe(false);
  });

  it('at a share, a request is traced or not before any span is made, the same way for the same trace id everywhere', async () => {
    const tracing = await startTracing('test', config('http://127.0.0.1:9', 10));
    try {
      const ids = Array.from({ length: 2000 }, () => randomBytes(16).toString('hex'));
      const kept = ids.filter((id) => tracesRequest(`00-${id}-00f067aa0ba902b7-01`));
      expect(kept.length).toBeGreaterThan(100);
      expect(kept.length).toBeLessThan(300);
      expect(ids.filter((id) => tracesRequest(`00-${id}-00f067aa0ba902b7-01`))).toEqual(kept);
      const fresh = Array.from({ length: 2000 }, () => tracesRequest(undefined)).filter(Boolean).length;
      expect(fresh).toBeGreaterThan(100);
      expect(fresh).toBeLessThan(300);
    } finally {
      await tracing.shutdown();
    }
    expect(tracesRequest(undefined)).toBe(false);
  });
});
