import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreateWorkerResultType, IncomingEvent } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { CHART_DIR } from '@svc/test-support/helm';
import { conventionProblems, scrape, valueOf, type Scrape } from './metrics.js';
import { controlClient } from './sidecar-process.js';
import { bashRequest, postAsWorker } from './worker-events.js';
import { startStack, type E2eStack } from './stack.js';

/** The metrics a platform team's dashboard and alerts read (issue 23); each must be exposed by some service. */
const EXPECTED = [
  'svc_http_requests_total',
  'svc_http_request_duration_seconds',
  'svc_events_accepted_total',
  'svc_events_stored_total',
  'svc_events_announced_total',
  'svc_ingest_append_duration_seconds',
  'svc_ingest_pending_messages',
  'svc_decisions_total',
  'svc_decision_wait_seconds',
  'svc_open_requests',
  'svc_open_requests_overdue',
  'svc_workers',
  'svc_websocket_viewers',
  'svc_long_polls_in_flight',
  'svc_spawn_step_duration_seconds',
  'svc_model_proxy_requests_total',
  'svc_model_proxy_tokens_total',
  'svc_model_proxy_bytes_total',
];

describe("every service's /metrics, scraped during a run (every service its own process)", () => {
  let stack: E2eStack;
  let userToken: string;
  beforeAll(async () => {
    stack = await startStack({ probes: true });
    userToken = await stack.userToken('metrics-user');
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
  }, 60_000);

  const scrapeAll = async (): Promise<Record<keyof E2eStack['metricsUrls'], Scrape[]>> => {
    const entries = await Promise.all(
      Object.entries(stack.metricsUrls).map(async ([service, urls]) => [service, await Promise.all(urls.map((url) => scrape(url)))] as const),
    );
    return Object.fromEntries(entries) as Record<keyof E2eStack['metricsUrls'], Scrape[]>;
  };

  const post = async (worker: CreateWorkerResultType, events: Array<Omit<IncomingEvent, 'ts'>>) =>
    expect(await postAsWorker(stack.gatewayUrl, worker, events)).toBe(202);

  it('the counters move by what the run did: events accepted and stored = posted; decisions by who decided; names, types and units follow the conventions', async () => {
    const before = await scrapeAll();
    const api = controlClient(stack.gatewayUrl, userToken);
    const worker = await stack.createWorker('metrics-user');
    const hurried = await stack.createWorker('metrics-user', { decision_policy: { decision_timeout_s: 1, on_timeout: 'deny' } });
    const texts = Array.from({ length: 40 }, (_, i): Omit<IncomingEvent, 'ts'> => ({ type: 'assistant', uid: `text-${i}`, data: { text: `line ${i}` } }));
    // 40 texts and 3 requests in 4 POSTs; one request the sidecar's rules decide (a policy decision it posts), one a person, one the deadline.
    await post(worker, texts.slice(0, 20));
    await post(worker, [...texts.slice(20), bashRequest('by-person')]);
    await post(worker, [
      bashRequest('by-policy'),
      {
        type: 'control_response',
        uid: 'policy-decision',
        data: { request_id: 'by-policy', decision: 'allow', decided_by: 'policy', message: 'auto-approved' },
      },
    ]);
    await post(hurried, [bashRequest('by-deadline')]);
    const posted = 40 + 3 + 1;
    await waitFor('the request open for a person', async () => (await api.openRequests(worker.worker_id)).some((r) => r.data.request_id === 'by-person'));
    expect((await api.decide(worker.worker_id, { request_id: 'by-person', decision: 'allow' })).status).toBe(201);
    await waitFor('the deadline decision', async () => (await api.events(hurried.worker_id)).some((e) => e.type === 'control_response'), 15_000);
    // The worker's 43 posted events and the person's decision.
    await waitFor('every event stored', async () => (await api.events(worker.worker_id)).length === 44);

    const after = await scrapeAll();
    const moved = (service: keyof typeof after, name: string, labels: Record<string, string> = {}) =>
      valueOf(after[service], name, labels) - valueOf(before[service], name, labels);
    expect(moved('gateway', 'svc_events_accepted_total')).toBe(posted);
    expect(moved('event-ingest', 'svc_events_stored_total')).toBe(posted);
    // Ingest announces what it stored and the two decisions control stored (handed over to it, announced a moment later).
    await expect
      .poll(
        async () => valueOf((await scrapeAll())['event-ingest'], 'svc_events_announced_total') - valueOf(before['event-ingest'], 'svc_events_announced_total'),
      )
      .toBe(posted + 2);
    expect(moved('gateway', 'svc_http_requests_total', { method: 'POST', route: '/v1/workers/:id/sdk-events', status: '202' })).toBe(4);
    expect(moved('gateway', 'svc_http_request_duration_seconds', { method: 'POST', route: '/v1/workers/:id/sdk-events', status: '202' })).toBe(4);
    expect(moved('control', 'svc_decisions_total', { decided_by: 'person' })).toBe(1);
    expect(moved('control', 'svc_decisions_total', { decided_by: 'timeout' })).toBe(1);
    expect(moved('event-ingest', 'svc_decisions_total', { decided_by: 'policy' })).toBe(1);
    expect(moved('control', 'svc_decision_wait_seconds', { decided_by: 'timeout' })).toBe(1);
    expect(valueOf(after['event-ingest'], 'svc_ingest_append_duration_seconds')).toBeGreaterThan(0);
    // Every partition's backlog is reported, by the replica that owns it; all stored by now.
    const partitions = after['event-ingest'].flatMap((s) => s.families.get('svc_ingest_pending_messages')?.metrics.map((m) => m.labels?.['partition']) ?? []);
    expect(new Set(partitions).size).toBe(partitions.length);
    expect(partitions.length).toBeGreaterThanOrEqual(2);
    expect(valueOf(after['event-ingest'], 'svc_ingest_pending_messages')).toBe(0);
    expect(valueOf(after.control, 'svc_open_requests')).toBe(0);

    const families = Object.values(after).flatMap((scrapes) => scrapes.flatMap((s) => [...s.families.values()]));
    const ours = families.filter((family) => family.name.startsWith('svc_'));
    expect(ours.flatMap(conventionProblems)).toEqual([]);
    expect(EXPECTED.filter((name) => !ours.some((family) => family.name === name))).toEqual([]);
    // What the chart's dashboard and alerts read is there (a histogram by its _bucket, _count, _sum series).
    const chart = [
      await readFile(path.join(CHART_DIR, 'files/grafana-dashboard.json'), 'utf8'),
      await readFile(path.join(CHART_DIR, 'templates/monitoring.yaml'), 'utf8'),
    ];
    const named = new Set(chart.flatMap((text) => [...text.matchAll(/\bsvc_[a-z_]+/g)].map(([name]) => name.replace(/_(bucket|count|sum)$/, ''))));
    expect(named.size).toBeGreaterThan(10);
    expect([...named].filter((name) => !ours.some((family) => family.name === name))).toEqual([]);
    // The process's own, under their usual names.
    expect(families.some((family) => family.name === 'process_cpu_user_seconds_total')).toBe(true);
  }, 90_000);

  it("the gateway's own port serves the same metrics to an admin's token only", async () => {
    const anonymous = await fetch(`${stack.gatewayUrl}/metrics`);
    expect(anonymous.status).toBe(401);
    const user = await fetch(`${stack.gatewayUrl}/metrics`, { headers: { authorization: `Bearer ${userToken}` } });
    expect(user.status).toBe(403);
    expect(((await user.json()) as { code: string }).code).toBe('forbidden');
    const admin = await fetch(`${stack.gatewayUrl}/metrics`, { headers: { authorization: `Bearer ${await stack.userToken('ops', { svc_admin: true })}` } });
    expect(admin.status).toBe(200);
    expect(admin.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(await admin.text()).toContain('# TYPE svc_http_requests_total counter');
  });
});
