import parsePrometheusTextFormat, { type MetricFamily } from 'parse-prometheus-text-format';

/** One scrape of one process: its metric families by name, and the exposition as sent. */
export interface Scrape {
  families: Map<string, MetricFamily>;
  text: string;
}

/** Scrapes a `/metrics` endpoint and parses the exposition with a well-kept parser (`promtool` is not available here). */
export async function scrape(url: string): Promise<Scrape> {
  const response = await fetch(url);
  if (response.status !== 200) throw new Error(`${url} answered ${response.status}`);
  const text = await response.text();
  return { families: new Map(parsePrometheusTextFormat(text).map((family) => [family.name, family])), text };
}

const matches = (labels: Record<string, string> | undefined, wanted: Record<string, string>) =>
  Object.entries(wanted).every(([key, value]) => labels?.[key] === value);

/**
 * A counter's or gauge's value, or a histogram's count of observations, summed over the series
 * whose labels include `labels`. The parser merges a histogram's labelled series into one (it
 * keeps only the buckets), so a histogram's `<name>_count` samples are read from the exposition
 * itself: one sample per line, `name{label="value",…} number`.
 */
export function valueOf(scrapes: readonly Scrape[], name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const { families, text } of scrapes) {
    const family = families.get(name);
    if (family?.type === 'HISTOGRAM') {
      for (const line of text.split('\n')) {
        const sample = new RegExp(`^${name}_count(?:\\{(.*)\\})? (\\S+)$`).exec(line);
        if (!sample) continue;
        const sampleLabels = Object.fromEntries([...(sample[1] ?? '').matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)].map(([, key, value]) => [key!, value!]));
        if (matches(sampleLabels, labels)) total += Number(sample[2]);
      }
      continue;
    }
    for (const metric of family?.metrics ?? []) if (matches(metric.labels, labels)) total += Number(metric.value ?? 0);
  }
  return total;
}

/** What Prometheus' conventions ask of a family's name, for its type; empty when it follows them. */
export function conventionProblems(family: MetricFamily): string[] {
  const problems: string[] = [];
  if (!/^[a-z_:][a-z0-9_:]*$/.test(family.name)) problems.push(`${family.name}: not a valid metric name`);
  if (!family.help.trim()) problems.push(`${family.name}: no help text`);
  if (family.type === 'COUNTER' && !family.name.endsWith('_total')) problems.push(`${family.name}: a counter's name ends in _total`);
  if (family.type !== 'COUNTER' && family.name.endsWith('_total')) problems.push(`${family.name}: only a counter's name ends in _total`);
  if (family.type === 'HISTOGRAM' && !/_(seconds|bytes)$/.test(family.name)) problems.push(`${family.name}: a histogram is in base units (_seconds, _bytes)`);
  if (/_(milliseconds|ms|kb|mb|minutes)(_|$)/.test(family.name)) problems.push(`${family.name}: not a base unit`);
  return problems;
}
