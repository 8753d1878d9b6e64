import {
  Counter,
  Gauge,
  Histogram,
  Registry,
  collectDefaultMetrics,
  type CounterConfiguration,
  type GaugeConfiguration,
  type HistogramConfiguration,
} from 'prom-client';

/**
 * The process's Prometheus metrics (`prom-client`): one registry per process, so the local stack
 * (every service in one process) exposes every service's metrics at once, and a service in its
 * own process exposes its own. Each metric belongs to one service and says so in its name
 * (`svc_http_…` the gateway's, `svc_ingest_…` event-ingest's); Prometheus adds the pod and job.
 * Names follow its conventions: `svc_…_total` counters, base units (`_seconds`, `_bytes`).
 */
export const metricsRegistry = new Registry();
// The process's own (CPU, memory, event loop, GC) under their usual names, as dashboards for Node expect them.
collectDefaultMetrics({ register: metricsRegistry });

/** Buckets for request and append latencies: 0.5 ms to 10 s. */
export const LATENCY_BUCKETS_S = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Buckets for how long a person takes to decide, and spawn steps: 0.1 s to an hour. */
export const WAIT_BUCKETS_S = [0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600];

/**
 * A metric of the process registry, made once: a second service in the same process (the local
 * stack) asking for the same name gets the same metric, not an error.
 */
function once<T>(name: string, make: () => T): T {
  return (metricsRegistry.getSingleMetric(name) as T | undefined) ?? make();
}

export function counter<L extends string>(config: Omit<CounterConfiguration<L>, 'registers'>): Counter<L> {
  return once(config.name, () => new Counter<L>({ ...config, registers: [metricsRegistry] }));
}

export function gauge<L extends string>(config: Omit<GaugeConfiguration<L>, 'registers'>): Gauge<L> {
  return once(config.name, () => new Gauge<L>({ ...config, registers: [metricsRegistry] }));
}

export function histogram<L extends string>(config: Omit<HistogramConfiguration<L>, 'registers'>): Histogram<L> {
  return once(config.name, () => new Histogram<L>({ ...config, registers: [metricsRegistry] }));
}

/** The exposition (text format 0.0.4) and its content type, for a `/metrics` answer. */
export async function metricsExposition(): Promise<{ contentType: string; body: string }> {
  return { contentType: metricsRegistry.contentType, body: await metricsRegistry.metrics() };
}

/**
 * `svc_decisions_total{decided_by}`: counted where each decision is stored, once — control for a
 * person's and the deadline's, event-ingest for the sidecar rules' (`policy`). Sum over services.
 */
export function decisionsCounter(): Counter<'decided_by'> {
  return counter({
    name: 'svc_decisions_total',
    help: 'Decisions, by who decided: person and timeout (counted by control, which stores them), policy (the sidecar rules, counted by event-ingest, which stores them).',
    labelNames: ['decided_by'],
  });
}
