import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One span as the receiver got it, with the service that sent it (its resource's `service.name`). */
export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  /** Empty for a trace's root (or a span whose parent was in a process that exported nothing). */
  parentSpanId: string;
  name: string;
  /** OTLP's numbers: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  links: Array<{ traceId: string; spanId: string }>;
  attributes: Record<string, unknown>;
}

export interface OtlpReceiverOptions {
  /** Parse and keep every span (default). Off, the receiver only counts what it got, as a collector elsewhere would cost a benchmark nothing. */
  keepSpans?: boolean;
}

export interface OtlpReceiver {
  /** The base URL a process is given as `SVC_OTEL_EXPORTER_OTLP_ENDPOINT` (spans arrive at `/v1/traces`). */
  url: string;
  /** Every span received so far (with `keepSpans`). */
  spans(): ReceivedSpan[];
  /** Export requests and their bytes received so far. */
  exports(): { requests: number; bytes: number };
  /** Export requests refused (not JSON, wrong path): a test asserts there were none. */
  refused(): string[];
  close(): Promise<void>;
}

// The subset of OTLP/JSON (opentelemetry-proto's JSON mapping, ids in hex) a trace export holds.
interface AnyValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}
interface KeyValue {
  key: string;
  value: AnyValue;
}
interface ExportTraceServiceRequest {
  resourceSpans?: Array<{
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: Array<{
      spans?: Array<{
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind: number;
        attributes?: KeyValue[];
        links?: Array<{ traceId: string; spanId: string }>;
      }>;
    }>;
  }>;
}

const valueOf = (value: AnyValue): unknown => value.stringValue ?? value.intValue ?? value.boolValue ?? value.doubleValue;
const attributesOf = (attributes: KeyValue[] = []) => Object.fromEntries(attributes.map(({ key, value }) => [key, valueOf(value)]));

async function bodyOf(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * A stand-in for an OpenTelemetry collector's OTLP/HTTP receiver (JSON encoding, what
 * `@opentelemetry/exporter-trace-otlp-http` sends): the real exporter posts to it over the network,
 * and it keeps every span for the test to read.
 */
export async function startOtlpReceiver(options: OtlpReceiverOptions = {}): Promise<OtlpReceiver> {
  const received: ReceivedSpan[] = [];
  const refused: string[] = [];
  const counted = { requests: 0, bytes: 0 };
  const server = createServer((request, response) => {
    void bodyOf(request).then((body) => {
      counted.requests += 1;
      counted.bytes += Buffer.byteLength(body);
      if (options.keepSpans === false) return void response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      if (request.method !== 'POST' || request.url !== '/v1/traces' || !String(request.headers['content-type']).startsWith('application/json')) {
        refused.push(`${request.method} ${request.url} (${request.headers['content-type']})`);
        response.writeHead(404).end();
        return;
      }
      let parsed: ExportTraceServiceRequest;
      try {
        parsed = JSON.parse(body) as ExportTraceServiceRequest;
      } catch {
        refused.push(`a body that is not JSON: ${body.slice(0, 80)}`);
        response.writeHead(400).end();
        return;
      }
      for (const resourceSpans of parsed.resourceSpans ?? []) {
        const service = String(attributesOf(resourceSpans.resource?.attributes)['service.name'] ?? '');
        for (const scope of resourceSpans.scopeSpans ?? [])
          for (const span of scope.spans ?? [])
            received.push({
              service,
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId ?? '',
              name: span.name,
              kind: span.kind,
              links: (span.links ?? []).map((link) => ({ traceId: link.traceId, spanId: link.spanId })),
              attributes: attributesOf(span.attributes),
            });
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans: () => [...received],
    exports: () => ({ ...counted }),
    refused: () => [...refused],
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
