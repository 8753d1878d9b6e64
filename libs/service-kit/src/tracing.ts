import {
  context as contexts,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Context,
  type Link,
  type Span,
  type TextMapGetter,
} from '@opentelemetry/api';
import { integerSetting, optionalStringSetting } from './config.js';
import { SVC_VERSION } from './version.js';

export { SpanKind, type Context, type Link, type Span } from '@opentelemetry/api';

/** Where and how much a process traces (docs/tracing.md). */
export const tracingSettings = {
  /** An OTLP/HTTP collector's base URL (spans go to `<url>/v1/traces`); unset, nothing is traced. */
  otlpEndpoint: optionalStringSetting('SVC_OTEL_EXPORTER_OTLP_ENDPOINT'),
  /** The standard variable, used when ours is unset. */
  standardOtlpEndpoint: optionalStringSetting('OTEL_EXPORTER_OTLP_ENDPOINT'),
  /**
   * The share of traces kept, in percent. Default 10: every span costs each process it passes
   * some CPU to make and export, and a tenth of the traffic shows where time goes (measured:
   * docs/benchmarks.md#observability); 100 keeps every trace, for debugging.
   */
  samplePercent: integerSetting('SVC_OTEL_TRACES_SAMPLE_PERCENT', { default: 10, min: 0, max: 100 }),
};

/** What `startTracing` needs: `tracingSettings` as read, and the process's name. */
export interface TracingConfig {
  otlpEndpoint: string | undefined;
  standardOtlpEndpoint: string | undefined;
  samplePercent: number;
}

export interface Tracing {
  /** Sends what is still buffered and stops. */
  shutdown(): Promise<void>;
}

const tracer = trace.getTracer('svc', SVC_VERSION);
let enabled = false;
/** Whether a trace begun upstream (its id) is kept here; set by `startTracing`. */
let keepsTrace: (traceId: string) => boolean = () => false;
/** The share of new traces kept. */
let newTraceShare = 0;

const TRACEPARENT = /^00-([0-9a-f]{32})-[0-9a-f]{16}-([0-9a-f]{2})$/;

/**
 * Whether a request is traced, decided before any span is made (most are not, by default, and
 * then cost nothing more): a caller's sampled `traceparent` is kept at the configured share, by
 * its trace id, so every process keeps or drops the same traces; a caller's unsampled one is not;
 * a request without one starts a new trace at that share.
 */
export function tracesRequest(traceparent: string | undefined): boolean {
  if (!enabled) return false;
  const parsed = traceparent === undefined ? null : TRACEPARENT.exec(traceparent);
  if (!parsed) return Math.random() < newTraceShare;
  return (Number.parseInt(parsed[2]!, 16) & TraceFlags.SAMPLED) !== 0 && keepsTrace(parsed[1]!);
}

/**
 * Whether spans are made at all. Off (no endpoint), the hot paths skip every tracing step, so
 * tracing costs nothing worth measuring; the OpenTelemetry API would make no-op spans, but even
 * those cost an allocation and a header lookup per message.
 */
export function tracingEnabled(): boolean {
  return enabled;
}

/**
 * Makes this process export spans over OTLP/HTTP, with the W3C trace context (`traceparent`) as
 * the propagation format; without an endpoint, does nothing. Once per process: the local stack's
 * services share one.
 */
export async function startTracing(service: string, config: TracingConfig): Promise<Tracing> {
  const endpoint = config.otlpEndpoint ?? config.standardOtlpEndpoint;
  if (!endpoint || enabled) return { shutdown: () => Promise.resolve() };
  // The SDK is loaded only here: a process that traces nothing (the CLI, the sidecar, any service
  // without an endpoint) does not carry it.
  const [{ StackContextManager }, { W3CTraceContextPropagator }, { OTLPTraceExporter }, { resourceFromAttributes }, sdk, semantic] = await Promise.all([
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/core'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/semantic-conventions'),
  ]);
  const exporter = new OTLPTraceExporter({ url: `${endpoint.replace(/\/+$/, '')}/v1/traces` });
  const ratio = new sdk.TraceIdRatioBasedSampler(config.samplePercent / 100);
  keepsTrace = (traceId) => ratio.shouldSample(ROOT_CONTEXT, traceId).decision === sdk.SamplingDecision.RECORD_AND_SAMPLED;
  newTraceShare = config.samplePercent / 100;
  const provider = new sdk.BasicTracerProvider({
    resource: resourceFromAttributes({ [semantic.ATTR_SERVICE_NAME]: service, [semantic.ATTR_SERVICE_VERSION]: SVC_VERSION }),
    // Which traces are kept is decided where they enter (`tracesRequest`, before any span is
    // made); past that, every span of a kept trace is kept, and an unkept one makes none.
    sampler: new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() }),
    spanProcessors: [new sdk.BatchSpanProcessor(exporter)],
  });
  trace.setGlobalTracerProvider(provider);
  // Contexts travel explicitly (request.traceContext, message headers); the active one is set only
  // around synchronous work (`withContext`). An AsyncLocalStorage manager would follow every
  // promise, at a cost the gateway's req/s could not afford (docs/benchmarks.md#observability).
  contexts.setGlobalContextManager(new StackContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  enabled = true;
  return {
    async shutdown() {
      enabled = false;
      await provider.shutdown();
      trace.disable();
      contexts.disable();
      propagation.disable();
    },
  };
}

/** Starts a span under `parent` (none: a new trace). Only call it with tracing on. */
export function startSpan(
  name: string,
  options: { kind?: SpanKind; parent?: Context | undefined; links?: Link[]; attributes?: Record<string, string | number>; startTime?: number },
): Span {
  return tracer.startSpan(
    name,
    { kind: options.kind ?? SpanKind.INTERNAL, links: options.links, attributes: options.attributes, startTime: options.startTime },
    options.parent ?? ROOT_CONTEXT,
  );
}

/** A link to the span `ctx` holds (a batch's span links the traces of its other messages). */
export function linkTo(ctx: Context): Link | undefined {
  const span = trace.getSpanContext(ctx);
  return span && trace.isSpanContextValid(span) ? { context: span } : undefined;
}

/** The context of `span` under `parent`: what a message sent on its behalf carries. */
export function contextOf(span: Span, parent: Context = ROOT_CONTEXT): Context {
  return trace.setSpan(parent, span);
}

/** Ends `span`, marked failed when `err` is given. */
export function endSpan(span: Span, err?: unknown): void {
  if (err !== undefined) {
    span.recordException(err instanceof Error ? err : String(err));
    span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
  }
  span.end();
}

const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

/**
 * The trace-context headers (`traceparent`, `tracestate`) that carry `ctx` to another process;
 * none for a trace that is not sampled: the next process then makes no spans for it either, as
 * it would not have for an unsampled parent, at no cost.
 */
export function traceHeaders(ctx: Context): Readonly<Record<string, string>> {
  if (!isSampled(ctx)) return NO_HEADERS;
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier;
}

/** Whether `ctx` holds a span of a trace being kept. */
export function isSampled(ctx: Context): boolean {
  const span = trace.getSpanContext(ctx);
  return span !== undefined && (span.traceFlags & TraceFlags.SAMPLED) !== 0 && trace.isSpanContextValid(span);
}

/** The context a message or request carries in its headers, read through `get`. */
export function contextFromHeaders<Carrier>(carrier: Carrier, get: (carrier: Carrier, name: string) => string | undefined): Context {
  const getter: TextMapGetter<Carrier> = {
    get: (c, key) => get(c, key),
    keys: () => ['traceparent', 'tracestate'],
  };
  return propagation.extract(ROOT_CONTEXT, carrier, getter);
}

/** The trace id of `ctx` (for logs), if it has one. */
export function traceIdOf(ctx: Context | undefined): string | undefined {
  const span = ctx && trace.getSpanContext(ctx);
  return span && trace.isSpanContextValid(span) ? span.traceId : undefined;
}

/** Runs `fn` with `ctx` as the active context: log lines it writes synchronously carry its trace id. */
export function withContext<T>(ctx: Context, fn: () => T): T {
  return contexts.with(ctx, fn);
}

/** The active trace id, for the logger's mixin; undefined with tracing off. */
export function activeTraceId(): string | undefined {
  return enabled ? traceIdOf(contexts.active()) : undefined;
}
