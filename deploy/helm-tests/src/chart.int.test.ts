import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { connectBus, natsPermissionsFile, NATS_SERVICE_USERS } from '@svc/bus';
import { findNatsServerBinary, stopChild } from '@svc/nats-server';
import { EVENT_PARTITIONS, partitionsOfReplica, subjects } from '@svc/protocol';
import { createLogger } from '@svc/service-kit';
import { freePort, waitFor } from '@svc/test-support';
import { CHART_DIR, lintChart, renderChart, type Manifest } from '@svc/test-support/helm';

const PROFILES = ['single.yaml', 'distributed-external.yaml', 'distributed-bundled.yaml'] as const;
type Profile = (typeof PROFILES)[number];

interface PodSpec {
  volumes?: Array<{ name: string; secret?: { secretName: string }; configMap?: { name: string } }>;
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
  automountServiceAccountToken?: boolean;
  serviceAccountName?: string;
  containers: Array<{
    name: string;
    command?: string[];
    env?: Array<{ name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string }; secretKeyRef?: { name: string; key: string } } }>;
    envFrom?: Array<{ secretRef?: { name: string } }>;
    volumeMounts?: Array<{ name: string; mountPath: string }>;
    ports?: Array<{ name: string; containerPort: number }>;
    resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
    securityContext?: { runAsNonRoot?: boolean; allowPrivilegeEscalation?: boolean; readOnlyRootFilesystem?: boolean; capabilities?: { drop?: string[] } };
    readinessProbe?: { httpGet?: { path: string } };
    livenessProbe?: { httpGet?: { path: string } };
  }>;
}

/** The Pod spec of a workload (Deployment, StatefulSet) or of a Pod. */
function podSpecOf(manifest: Manifest): PodSpec | undefined {
  if (manifest.kind === 'Pod') return manifest['spec'] as PodSpec;
  if (manifest.kind === 'Deployment' || manifest.kind === 'StatefulSet') return (manifest['spec'] as { template: { spec: PodSpec } }).template.spec;
  return undefined;
}

const of = (manifests: Manifest[], kind: string) => manifests.filter((m) => m.kind === kind);
const named = (manifests: Manifest[], kind: string, suffix: string) => manifests.find((m) => m.kind === kind && m.metadata.name.endsWith(suffix));

/** The kubernetes-models class of an object (by its group, version and kind). */
async function modelOf(manifest: Manifest): Promise<new (data: unknown) => { validate(): void }> {
  const [group, version] = manifest.apiVersion.includes('/') ? manifest.apiVersion.split('/') : ['', manifest.apiVersion];
  // prometheus-operator's kinds come in their own package of the same project.
  const models = group === 'monitoring.coreos.com' ? '@kubernetes-models/prometheus-operator' : 'kubernetes-models';
  const module = (await import(`${models}/${group ? `${group}/` : ''}${version}`)) as Record<string, new (data: unknown) => { validate(): void }>;
  const model = module[manifest.kind];
  if (!model) throw new Error(`kubernetes-models has no ${manifest.apiVersion} ${manifest.kind}`);
  return model;
}

describe('the Helm chart (helm/svc), rendered with helm for three value profiles', () => {
  const rendered = new Map<Profile, Manifest[]>();
  beforeAll(async () => {
    for (const profile of PROFILES) rendered.set(profile, await renderChart({ valuesFiles: [profile] }));
  }, 60_000);

  it('helm lint --strict passes for every profile', async () => {
    for (const profile of PROFILES) expect(await lintChart({ valuesFiles: [profile] })).toContain('1 chart(s) linted, 0 chart(s) failed');
  });

  it('every rendered manifest is valid against the Kubernetes schemas (kubernetes-models)', async () => {
    let checked = 0;
    for (const [profile, manifests] of rendered) {
      for (const manifest of manifests) {
        const Model = await modelOf(manifest);
        expect(() => new Model(manifest).validate(), `${profile}: ${manifest.kind} ${manifest.metadata.name}`).not.toThrow();
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(40);
  });

  it('single mode: one Deployment runs the four services in one process (no per-service workloads)', () => {
    const manifests = rendered.get('single.yaml')!;
    const deployments = of(manifests, 'Deployment');
    expect(deployments.map((d) => d.metadata.name)).toEqual(['svc-single']);
    expect(of(manifests, 'StatefulSet')).toEqual([]);
    const pod = podSpecOf(deployments[0]!)!;
    expect(pod.containers[0]!.command).toEqual(['node', 'deploy/local-stack/dist/main.js']);
    const env = Object.fromEntries(pod.containers[0]!.env!.map((e) => [e.name, e.value]));
    expect(env).toMatchObject({
      SVC_DEMO: 'false',
      SVC_SANDBOX_PROVIDER: 'kubernetes',
      SVC_GATEWAY_HOST: '0.0.0.0',
      SVC_OIDC_ISSUER: 'https://accounts.example.com',
    });
    expect((deployments[0]!['spec'] as { replicas: number }).replicas).toBe(1);
  });

  it('distributed mode: a gateway Deployment with an HPA, an event-ingest StatefulSet, control and session Deployments', () => {
    const manifests = rendered.get('distributed-external.yaml')!;
    expect(
      of(manifests, 'Deployment')
        .map((d) => d.metadata.name)
        .sort(),
    ).toEqual(['svc-control', 'svc-gateway', 'svc-session']);
    expect(of(manifests, 'StatefulSet').map((s) => s.metadata.name)).toEqual(['svc-event-ingest']);
    expect((named(manifests, 'HorizontalPodAutoscaler', 'gateway')!['spec'] as { scaleTargetRef: { name: string } }).scaleTargetRef.name).toBe('svc-gateway');
    expect(
      of(manifests, 'PodDisruptionBudget')
        .map((p) => p.metadata.name)
        .sort(),
    ).toEqual(['svc-control', 'svc-event-ingest', 'svc-gateway', 'svc-session']);
    // External NATS and Postgres: nothing of ours runs them; the URL comes from the existing Secret.
    const session = podSpecOf(named(manifests, 'Deployment', 'session')!)!;
    expect(session.containers[0]!.env!.find((e) => e.name === 'SVC_NATS_URL')!.value).toBe('nats://nats.nats.svc:4222');
    expect(session.containers[0]!.env!.find((e) => e.name === 'SVC_DATABASE_URL')!.valueFrom).toEqual({ secretKeyRef: { name: 'svc-database', key: 'uri' } });
    // Migrations on their own connection (past a transaction-mode pooler), from the same Secret.
    expect(session.containers[0]!.env!.find((e) => e.name === 'SVC_DATABASE_MIGRATION_URL')!.valueFrom).toEqual({
      secretKeyRef: { name: 'svc-database', key: 'migration-uri' },
    });
    expect(manifests.some((m) => m.metadata.name.endsWith('-nats') || m.metadata.name.endsWith('-postgres'))).toBe(false);
    const bundled = rendered.get('distributed-bundled.yaml')!;
    expect(
      of(bundled, 'StatefulSet')
        .map((s) => s.metadata.name)
        .sort(),
    ).toEqual(['svc-event-ingest', 'svc-nats', 'svc-postgres']);
    expect(of(bundled, 'HorizontalPodAutoscaler')).toEqual([]);
  });

  it("event-ingest replicas get distinct replica indexes: each Pod's ordinal, with the replica count; together they own every partition once", () => {
    for (const profile of ['distributed-external.yaml', 'distributed-bundled.yaml'] as const) {
      const statefulSet = named(rendered.get(profile)!, 'StatefulSet', 'event-ingest')!;
      const spec = statefulSet['spec'] as { replicas: number; podManagementPolicy: string };
      const env = podSpecOf(statefulSet)!.containers[0]!.env!;
      expect(env.find((e) => e.name === 'SVC_INGEST_REPLICA_INDEX')!.valueFrom).toEqual({
        fieldRef: { fieldPath: "metadata.labels['apps.kubernetes.io/pod-index']" },
      });
      expect(env.find((e) => e.name === 'SVC_INGEST_REPLICA_COUNT')!.value).toBe(String(spec.replicas));
      expect(spec.podManagementPolicy).toBe('Parallel');
      // The ordinals 0…replicas-1 are the indexes: their partitions are disjoint and cover all.
      const owned = Array.from({ length: spec.replicas }, (_, ordinal) => partitionsOfReplica(ordinal, spec.replicas));
      expect(owned.flat().sort((a, b) => a - b)).toEqual(Array.from({ length: EVENT_PARTITIONS }, (_, p) => p));
    }
    expect((named(rendered.get('distributed-external.yaml')!, 'StatefulSet', 'event-ingest')!['spec'] as { replicas: number }).replicas).toBe(4);
  });

  it("the sandboxes' NetworkPolicy exists and admits only the gateway (and DNS); nothing may reach a sandbox", () => {
    for (const [profile, manifests] of rendered) {
      const policies = of(manifests, 'NetworkPolicy');
      expect(policies, profile).toHaveLength(1);
      const policy = policies[0]!;
      expect(policy.metadata.namespace).toBe('svc-sandboxes');
      const spec = policy['spec'] as {
        podSelector: object;
        policyTypes: string[];
        ingress: unknown[];
        egress: Array<{
          to: Array<{ namespaceSelector?: { matchLabels?: Record<string, string> }; podSelector?: { matchLabels?: Record<string, string> } }>;
          ports: Array<{ port: number; protocol: string }>;
        }>;
      };
      expect(spec.podSelector).toEqual({});
      expect(spec.policyTypes.sort()).toEqual(['Egress', 'Ingress']);
      expect(spec.ingress).toEqual([]);
      expect(spec.egress).toHaveLength(2);
      const [toGateway, toDns] = spec.egress;
      expect(toGateway!.to).toEqual([
        {
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'svc' } },
          podSelector: { matchLabels: { 'app.kubernetes.io/instance': 'svc', 'svc.dev/serves-gateway': 'true' } },
        },
      ]);
      // The worker port alone: the sidecar's routes, never the API people use.
      expect(toGateway!.ports).toEqual([{ protocol: 'TCP', port: 8082 }]);
      expect(toDns!.ports.map((p) => p.port)).toEqual([53, 53]);
      // The Pods that label selects are exactly those serving the gateway.
      const servingGateway = manifests.filter(
        (m) =>
          (m['spec'] as { template?: { metadata?: { labels?: Record<string, string> } } } | undefined)?.template?.metadata?.labels?.[
            'svc.dev/serves-gateway'
          ] === 'true',
      );
      expect(
        servingGateway.map((m) => m.metadata.name),
        profile,
      ).toEqual([profile === 'single.yaml' ? 'svc-single' : 'svc-gateway']);
      // That port is the gateway's worker port, which the sandboxes' sidecars are pointed at.
      const gatewayPod = podSpecOf(servingGateway[0]!)!.containers[0]!;
      expect(gatewayPod.ports).toContainEqual({ name: 'worker', containerPort: 8082 });
      expect(gatewayPod.env).toContainEqual({ name: 'SVC_GATEWAY_WORKER_PORT', value: '8082' });
      const sessionPod = podSpecOf(profile === 'single.yaml' ? servingGateway[0]! : named(manifests, 'Deployment', '-session')!)!.containers[0]!;
      expect(sessionPod.env).toContainEqual({ name: 'SVC_SANDBOX_CONTROL_PLANE_URL', value: 'http://svc-gateway.svc.svc:8082' });
    }
  });

  it('the user-assertion key (who decides, signed by the gateway, checked by control) reaches the gateway and control only', () => {
    for (const profile of ['distributed-external.yaml', 'distributed-bundled.yaml'] as const) {
      const manifests = rendered.get(profile)!;
      const assertionKey = { name: 'SVC_USER_ASSERTION_KEY', valueFrom: { secretKeyRef: { name: 'svc-user-assertions', key: 'key' } } };
      for (const [kind, component, has] of [
        ['Deployment', 'gateway', true],
        ['Deployment', 'control', true],
        ['Deployment', 'session', false],
        ['StatefulSet', 'event-ingest', false],
      ] as const) {
        const env = podSpecOf(named(manifests, kind, `-${component}`)!)!.containers[0]!.env!;
        if (has) expect(env, `${profile} ${component}`).toContainEqual(assertionKey);
        else
          expect(
            env.map((variable) => variable.name),
            `${profile} ${component}`,
          ).not.toContain('SVC_USER_ASSERTION_KEY');
      }
      expect(named(manifests, 'Secret', '-user-assertions')).toBeDefined();
    }
  });

  it("NATS credentials for every service, in both modes: its own user and password (distributed), every user's mounted (single)", () => {
    for (const profile of ['distributed-external.yaml', 'distributed-bundled.yaml'] as const) {
      const manifests = rendered.get(profile)!;
      const secret = profile === 'distributed-external.yaml' ? 'svc-nats-users' : 'svc-nats-auth';
      for (const [kind, component] of [
        ['Deployment', 'gateway'],
        ['StatefulSet', 'event-ingest'],
        ['Deployment', 'control'],
        ['Deployment', 'session'],
      ] as const) {
        const env = podSpecOf(named(manifests, kind, `-${component}`)!)!.containers[0]!.env!;
        expect(env.find((e) => e.name === 'SVC_NATS_USER')?.value, `${profile} ${component}`).toBe(component);
        expect(env.find((e) => e.name === 'SVC_NATS_PASSWORD')?.valueFrom, `${profile} ${component}`).toEqual({
          secretKeyRef: { name: secret, key: component },
        });
      }
    }
    // The chart makes the Secret only when none is named: a password per user.
    const made = named(rendered.get('distributed-bundled.yaml')!, 'Secret', '-nats-auth')!;
    expect(Object.keys(made['data'] as object).sort()).toEqual([...NATS_SERVICE_USERS, 'operator'].sort());
    expect(named(rendered.get('distributed-external.yaml')!, 'Secret', '-nats-auth')).toBeUndefined();
    // Single mode: one process runs every service, each as its own user.
    const single = podSpecOf(named(rendered.get('single.yaml')!, 'Deployment', '-single')!)!;
    expect(single.containers[0]!.env!.find((e) => e.name === 'SVC_NATS_CREDENTIALS_DIR')?.value).toBe('/etc/svc/nats-credentials');
    expect(single.containers[0]!.volumeMounts).toContainEqual(expect.objectContaining({ name: 'nats-credentials', mountPath: '/etc/svc/nats-credentials' }));
    expect(single.volumes).toContainEqual({ name: 'nats-credentials', secret: { secretName: 'svc-nats-auth' } });
  });

  it("the chart's NATS permissions are libs/bus's (files/nats-permissions.json is up to date)", async () => {
    const file = await readFile(path.join(CHART_DIR, 'files/nats-permissions.json'), 'utf8');
    expect(file, 'regenerate it: npx nx run @svc/bus:build && node deploy/helm-tests/scripts/write-nats-permissions.mjs').toBe(natsPermissionsFile());
  });

  it('the bundled NATS, run with the rendered config: a stranger is refused, the gateway may publish incoming events but not announce a stored one', async () => {
    const manifests = rendered.get('distributed-bundled.yaml')!;
    const config = (named(manifests, 'ConfigMap', '-nats-authorization')!['data'] as Record<string, string>)['nats.conf']!;
    const nats = podSpecOf(named(manifests, 'StatefulSet', '-nats')!)!.containers[0]!;
    expect(nats.env!.map((e) => e.name).sort()).toEqual([
      'SVC_NATS_PASSWORD_CONTROL',
      'SVC_NATS_PASSWORD_EVENT_INGEST',
      'SVC_NATS_PASSWORD_GATEWAY',
      'SVC_NATS_PASSWORD_OPERATOR',
      'SVC_NATS_PASSWORD_SESSION',
    ]);
    const dir = await mkdtemp(path.join(tmpdir(), 'svc-chart-nats-'));
    const port = await freePort();
    const passwords = {
      SVC_NATS_PASSWORD_CONTROL: 'c',
      SVC_NATS_PASSWORD_EVENT_INGEST: 'e',
      SVC_NATS_PASSWORD_GATEWAY: 'g',
      SVC_NATS_PASSWORD_OPERATOR: 'o',
      SVC_NATS_PASSWORD_SESSION: 's',
    };
    await writeFile(path.join(dir, 'nats.conf'), config);
    const server = spawn(findNatsServerBinary(), ['--config', path.join(dir, 'nats.conf'), '-a', '127.0.0.1', '-p', String(port)], {
      env: { ...process.env, ...passwords },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let log = '';
    server.stderr.on('data', (chunk: Buffer) => (log += chunk.toString()));
    const logger = createLogger({ name: 'chart-nats', level: 'silent' });
    const url = `nats://127.0.0.1:${port}`;
    try {
      await waitFor('the bundled NATS config to load', async () => log.includes('Server is ready'), 10_000, 50).catch(() => {
        throw new Error(`nats-server did not start with the chart's config:\n${log}`);
      });
      await expect(connectBus({ servers: url, name: 'stranger', logger, connectTimeoutMs: 1000 })).rejects.toThrow(/without credentials/);
      const operator = await connectBus({ servers: url, name: 'operator', logger, credentials: { user: 'operator', password: 'o' } });
      const gateway = await connectBus({ servers: url, name: 'gateway', logger, credentials: { user: 'gateway', password: 'g' } });
      const seen: string[] = [];
      const subscription = operator.subscribe('svc.>', {
        callback: (_err, message) => {
          seen.push(message.subject);
        },
      });
      await operator.flush();
      gateway.publish(subjects.incomingEvent(1, 'wrk_chart'), 'x');
      gateway.publish(subjects.storedEvent('wrk_chart'), 'x');
      // Once the gateway's flush is answered, the server has routed (or refused) both; once the
      // operator's is, the operator has read what was routed to it.
      await gateway.flush();
      await operator.flush();
      expect(seen).toEqual([subjects.incomingEvent(1, 'wrk_chart')]);
      subscription.unsubscribe();
      await Promise.all([operator.close(), gateway.close()]);
    } finally {
      await stopChild(server);
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('model keys: only the Pods serving the gateway mount them; no other workload, and nothing in the sandbox namespace, names a Secret', () => {
    for (const [profile, manifests] of rendered) {
      for (const manifest of manifests) {
        const pod = podSpecOf(manifest);
        if (!pod) continue;
        const container = pod.containers[0]!;
        const keyRefs = (container.env ?? []).filter((e) => /^SVC_(ANTHROPIC|OPENAI)_API_KEY$/.test(e.name));
        const servesGateway =
          (manifest['spec'] as { template?: { metadata?: { labels?: Record<string, string> } } }).template?.metadata?.labels?.['svc.dev/serves-gateway'] ===
          'true';
        if (!servesGateway) expect(keyRefs, `${profile} ${manifest.metadata.name}`).toEqual([]);
        if (servesGateway && profile !== 'distributed-bundled.yaml') expect(keyRefs.length, `${profile} ${manifest.metadata.name}`).toBeGreaterThanOrEqual(1);
        for (const ref of keyRefs) expect(ref.valueFrom?.secretKeyRef?.name).toBe('svc-model-keys');
        expect(JSON.stringify(manifest), `${profile} ${manifest.metadata.name}`).not.toContain('sk-');
      }
      // The sandbox namespace holds no workload and refers to no Secret: sandbox Pods are made by the session service, with none (kubernetes-sandbox.int.test.ts).
      const inSandboxNamespace = manifests.filter((m) => m.metadata.namespace === 'svc-sandboxes');
      expect(inSandboxNamespace.map((m) => m.kind).sort(), profile).toEqual(['NetworkPolicy', 'Role', 'RoleBinding']);
      for (const manifest of inSandboxNamespace) expect(JSON.stringify(manifest), profile).not.toMatch(/secret/i);
    }
    // Egress tunnels never reach the cluster's API or the bundled Postgres (NATS and the gateway's own ports the gateway adds itself).
    const bundledGateway = podSpecOf(named(rendered.get('distributed-bundled.yaml')!, 'Deployment', '-gateway')!)!.containers[0]!.env!;
    expect(bundledGateway.find((e) => e.name === 'SVC_EGRESS_REFUSED')!.value).toBe('kubernetes.default.svc,svc-postgres.svc.svc:5432');
    const gatewayEnv = podSpecOf(named(rendered.get('distributed-external.yaml')!, 'Deployment', '-gateway')!)!.containers[0]!.env!;
    expect(gatewayEnv.find((e) => e.name === 'SVC_ANTHROPIC_API_KEY')!.valueFrom).toEqual({ secretKeyRef: { name: 'svc-model-keys', key: 'anthropic' } });
    expect(gatewayEnv.find((e) => e.name === 'SVC_OPENAI_UPSTREAM_URL')!.value).toBe('https://api.openai.com');
  });

  it('every container runs as non-root, without privilege escalation, with a read-only root, and with resources set', () => {
    for (const [profile, manifests] of rendered) {
      for (const manifest of manifests) {
        const pod = podSpecOf(manifest);
        if (!pod) continue;
        for (const container of pod.containers) {
          const where = `${profile}: ${manifest.kind} ${manifest.metadata.name} / ${container.name}`;
          expect(pod.securityContext?.runAsNonRoot ?? container.securityContext?.runAsNonRoot, where).toBe(true);
          expect(pod.securityContext?.runAsUser, where).toBeGreaterThan(0);
          expect(container.securityContext, where).toMatchObject({
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'] },
          });
          expect(container.resources?.requests?.['cpu'], where).toBeDefined();
          expect(container.resources?.requests?.['memory'], where).toBeDefined();
          expect(container.resources?.limits?.['memory'], where).toBeDefined();
        }
      }
    }
  });

  it('control-plane Pods are probed on /healthz and /readyz', () => {
    for (const [profile, manifests] of rendered) {
      for (const workload of [...of(manifests, 'Deployment'), ...of(manifests, 'StatefulSet')].filter((m) => !/-(nats|postgres)$/.test(m.metadata.name))) {
        const container = podSpecOf(workload)!.containers[0]!;
        expect(container.readinessProbe?.httpGet?.path, `${profile} ${workload.metadata.name}`).toBe('/readyz');
        expect(container.livenessProbe?.httpGet?.path, `${profile} ${workload.metadata.name}`).toBe('/healthz');
      }
    }
  });

  it('tracing: with tracing.otlpEndpoint, every control-plane container is given it (and the sample share); without, none is', async () => {
    const envOf = (manifests: Manifest[]) =>
      [...of(manifests, 'Deployment'), ...of(manifests, 'StatefulSet')]
        .filter((m) => !/-(nats|postgres)$/.test(m.metadata.name))
        .map((workload) => ({ name: workload.metadata.name, env: podSpecOf(workload)!.containers[0]!.env ?? [] }));
    for (const profile of ['single.yaml', 'distributed-external.yaml'] as const) {
      for (const { name, env } of envOf(rendered.get(profile)!))
        expect(
          env.map((variable) => variable.name),
          `${profile} ${name}`,
        ).not.toContain('SVC_OTEL_EXPORTER_OTLP_ENDPOINT');
      const traced = await renderChart({ valuesFiles: [profile], set: { 'tracing.otlpEndpoint': 'http://collector:4318', 'tracing.samplePercent': '25' } });
      const workloads = envOf(traced);
      expect(workloads.length).toBeGreaterThan(0);
      for (const { name, env } of workloads) {
        expect(env, `${profile} ${name}`).toContainEqual({ name: 'SVC_OTEL_EXPORTER_OTLP_ENDPOINT', value: 'http://collector:4318' });
        expect(env, `${profile} ${name}`).toContainEqual({ name: 'SVC_OTEL_TRACES_SAMPLE_PERCENT', value: '25' });
      }
    }
  });

  it('stream replicas: 3 with an external NATS, 1 with the bundled single server, as set when nats.jetstreamReplicas is; every control-plane container is told', async () => {
    const replicasOf = (manifests: Manifest[]) =>
      [...of(manifests, 'Deployment'), ...of(manifests, 'StatefulSet')]
        .filter((m) => !/-(nats|postgres)$/.test(m.metadata.name))
        .map((workload) => (podSpecOf(workload)!.containers[0]!.env ?? []).find((variable) => variable.name === 'SVC_JETSTREAM_REPLICAS')?.value);
    const expected: Array<[Manifest[], string]> = [
      [rendered.get('distributed-external.yaml')!, '3'],
      [rendered.get('distributed-bundled.yaml')!, '1'],
      [await renderChart({ valuesFiles: ['distributed-external.yaml'], set: { 'nats.jetstreamReplicas': '5' } }), '5'],
    ];
    for (const [manifests, replicas] of expected) {
      const values = replicasOf(manifests);
      expect(values.length).toBeGreaterThan(0);
      expect(new Set(values)).toEqual(new Set([replicas]));
    }
  });

  it("decision links: every control-plane container gets the signing key from the chart's Secret (a random key, rendered) and the public URL", () => {
    for (const [profile, manifests] of rendered) {
      const secret = named(manifests, 'Secret', '-decision-links');
      expect(secret, profile).toBeDefined();
      expect(Buffer.from(String((secret!['data'] as Record<string, string>)['key']), 'base64').toString().length).toBeGreaterThanOrEqual(32);
      for (const workload of [...of(manifests, 'Deployment'), ...of(manifests, 'StatefulSet')].filter((m) => !/-(nats|postgres)$/.test(m.metadata.name))) {
        const env = podSpecOf(workload)!.containers[0]!.env ?? [];
        expect(env, `${profile} ${workload.metadata.name}`).toContainEqual({
          name: 'SVC_DECISION_LINK_KEY',
          valueFrom: { secretKeyRef: { name: secret!.metadata.name, key: 'key' } },
        });
        expect(
          env.filter((variable) => variable.name === 'SVC_GATEWAY_PUBLIC_URL'),
          `${profile} ${workload.metadata.name}`,
        ).toHaveLength(1);
      }
    }
  });

  it("audit key: only the control service's containers (and the single mode's) get SVC_AUDIT_KEY, from the chart's Secret (random, kept at uninstall) or the operator's", async () => {
    const envOfWorkload = (workload: Manifest) => podSpecOf(workload)!.containers[0]!.env ?? [];
    for (const [profile, manifests] of rendered) {
      const secret = named(manifests, 'Secret', '-audit-key');
      expect(secret, profile).toBeDefined();
      expect(secret!.metadata.annotations?.['helm.sh/resource-policy']).toBe('keep');
      expect(Buffer.from(String((secret!['data'] as Record<string, string>)['key']), 'base64').toString().length).toBeGreaterThanOrEqual(32);
      const workloads = [...of(manifests, 'Deployment'), ...of(manifests, 'StatefulSet')].filter((m) => !/-(nats|postgres)$/.test(m.metadata.name));
      for (const workload of workloads) {
        const key = envOfWorkload(workload).find((variable) => variable.name === 'SVC_AUDIT_KEY');
        if (/-(control|single)$/.test(workload.metadata.name))
          expect(key, `${profile} ${workload.metadata.name}`).toEqual({
            name: 'SVC_AUDIT_KEY',
            valueFrom: { secretKeyRef: { name: secret!.metadata.name, key: 'key' } },
          });
        else expect(key, `${profile} ${workload.metadata.name}`).toBeUndefined();
      }
    }
    const own = await renderChart({
      valuesFiles: ['distributed-external.yaml'],
      set: { 'control.audit.existingSecret': 'my-audit', 'control.audit.existingSecretKey': 'hmac', 'control.audit.headIntervalSeconds': '30' },
    });
    expect(named(own, 'Secret', '-audit-key')).toBeUndefined();
    const env = envOfWorkload(named(own, 'Deployment', '-control')!);
    expect(env).toContainEqual({ name: 'SVC_AUDIT_KEY', valueFrom: { secretKeyRef: { name: 'my-audit', key: 'hmac' } } });
    expect(env).toContainEqual({ name: 'SVC_AUDIT_PREVIOUS_KEYS', valueFrom: { secretKeyRef: { name: 'my-audit', key: 'previous-keys', optional: true } } });
    expect(env).toContainEqual({ name: 'SVC_AUDIT_HEAD_INTERVAL_S', value: '30' });
  });

  it('the RBAC grants the session service only the Pod verbs its sandbox provider uses, in the sandbox namespace only', () => {
    for (const [profile, manifests] of rendered) {
      expect(of(manifests, 'ClusterRole'), profile).toEqual([]);
      expect(of(manifests, 'ClusterRoleBinding'), profile).toEqual([]);
      const [role] = of(manifests, 'Role');
      expect(of(manifests, 'Role')).toHaveLength(1);
      expect(role!.metadata.namespace).toBe('svc-sandboxes');
      expect(role!['rules']).toEqual([
        { apiGroups: [''], resources: ['pods'], verbs: ['create', 'get', 'delete'] },
        { apiGroups: [''], resources: ['pods/exec'], verbs: ['create', 'get'] },
        { apiGroups: [''], resources: ['pods/log'], verbs: ['get'] },
      ]);
      const [binding] = of(manifests, 'RoleBinding');
      expect(binding!['subjects']).toEqual([{ kind: 'ServiceAccount', name: 'svc-session', namespace: 'svc' }]);
      // Only the Pods running the session service get a service account token.
      for (const manifest of manifests) {
        const pod = podSpecOf(manifest);
        if (!pod) continue;
        if (pod.serviceAccountName) expect(pod.serviceAccountName, manifest.metadata.name).toBe('svc-session');
        else expect(pod.automountServiceAccountToken, manifest.metadata.name).toBe(false);
      }
    }
  });

  it('monitoring, in both modes: a metrics Service over every control-plane Pod; with the prometheus-operator API, a valid ServiceMonitor and PrometheusRule; the dashboard ConfigMap parses', async () => {
    for (const profile of PROFILES) {
      const withoutApi = rendered.get(profile)!;
      expect(of(withoutApi, 'ServiceMonitor'), profile).toEqual([]);
      expect(of(withoutApi, 'PrometheusRule'), profile).toEqual([]);
      const manifests = await renderChart({ valuesFiles: [profile], apiVersions: ['monitoring.coreos.com/v1'] });
      const service = named(manifests, 'Service', '-metrics')!;
      expect(service['spec']).toMatchObject({ clusterIP: 'None', selector: { 'svc.dev/metrics': 'true' }, ports: [{ name: 'health', port: 8081 }] });
      // Every control-plane Pod is behind it, and serves the port it names.
      const servesProbes = (m: Manifest) =>
        (podSpecOf(m)?.containers[0] as { ports?: Array<{ name: string }> } | undefined)?.ports?.some((port) => port.name === 'health') ?? false;
      const workloads = manifests.filter((m) => (m.kind === 'Deployment' || m.kind === 'StatefulSet') && servesProbes(m));
      expect(workloads.length, profile).toBeGreaterThan(0);
      for (const workload of workloads) {
        const template = (workload['spec'] as { template: { metadata: { labels: Record<string, string> } } }).template;
        expect(template.metadata.labels['svc.dev/metrics'], workload.metadata.name).toBe('true');
      }
      const monitor = named(manifests, 'ServiceMonitor', '-metrics')!;
      expect(monitor['spec']).toMatchObject({ selector: { matchLabels: { 'svc.dev/metrics': 'true' } }, endpoints: [{ port: 'health', path: '/metrics' }] });
      const rules = of(manifests, 'PrometheusRule')[0]!;
      const alerts = (rules['spec'] as { groups: Array<{ rules: Array<{ alert: string; expr: string }> }> }).groups.flatMap((group) => group.rules);
      expect(alerts.map((rule) => rule.alert)).toEqual(['SvcIngestLagGrowing', 'SvcRequestsPastDeadline', 'SvcServiceDown', 'SvcGatewayErrors']);
      for (const manifest of [monitor, rules]) {
        const Model = await modelOf(manifest);
        expect(() => new Model(manifest).validate(), `${profile}: ${manifest.kind}`).not.toThrow();
      }
      const dashboard = named(manifests, 'ConfigMap', '-dashboard')!;
      expect(dashboard.metadata.labels?.['grafana_dashboard']).toBe('1');
      const json = JSON.parse((dashboard['data'] as Record<string, string>)['svc.json']!) as {
        panels: Array<{ title: string; targets: Array<{ expr: string }> }>;
      };
      expect(json.panels.length).toBeGreaterThanOrEqual(10);
      for (const panel of json.panels) expect(panel.targets.length, panel.title).toBeGreaterThan(0);
    }
    // Forced on without the API (a cluster installing the CRDs later), or off with it.
    expect(of(await renderChart({ valuesFiles: ['single.yaml'], set: { 'metrics.serviceMonitor.enabled': 'true' } }), 'ServiceMonitor')).toHaveLength(1);
    const off = await renderChart({
      valuesFiles: ['single.yaml'],
      apiVersions: ['monitoring.coreos.com/v1'],
      set: { 'metrics.serviceMonitor.enabled': 'false', 'metrics.prometheusRule.enabled': 'false', 'metrics.dashboard.enabled': 'false' },
    });
    expect([...of(off, 'ServiceMonitor'), ...of(off, 'PrometheusRule'), ...off.filter((m) => m.metadata.name.endsWith('-dashboard'))]).toEqual([]);
  }, 60_000);

  it('a helm test Pod calls /healthz and /v1/status', () => {
    const test = of(rendered.get('distributed-external.yaml')!, 'Pod')[0]!;
    expect(test.metadata.annotations?.['helm.sh/hook']).toBe('test');
    const script = podSpecOf(test)!.containers[0]!.command!.join(' ');
    expect(script).toContain('/healthz');
    expect(script).toContain('/v1/status');
  });

  it('validate.yaml refuses a combination that cannot work, saying what to change', async () => {
    const refusals: Array<[Record<string, string>, RegExp]> = [
      [
        { mode: 'cluster', 'nats.url': 'nats://n:4222', 'postgres.url': 'postgres://p', 'oidc.issuer': 'https://i' },
        /mode must be "single" or "distributed", got "cluster"/,
      ],
      [{ 'postgres.url': 'postgres://p', 'oidc.issuer': 'https://i' }, /set nats.url to your NATS server with JetStream/],
      [
        { 'nats.url': 'nats://n:4222', 'nats.bundled.enabled': 'true', 'postgres.url': 'postgres://p', 'oidc.issuer': 'https://i' },
        /choose one \(unset nats.url to use the bundled NATS\)/,
      ],
      [{ 'nats.url': 'nats://n:4222', 'oidc.issuer': 'https://i' }, /set postgres.existingSecret/],
      [{ 'nats.url': 'nats://n:4222', 'postgres.url': 'postgres://p' }, /set oidc.issuer/],
      [
        { 'nats.url': 'nats://n:4222', 'postgres.url': 'postgres://p', 'postgres.migrationSecretKey': 'migration-uri', 'oidc.issuer': 'https://i' },
        /postgres.migrationSecretKey names a key of postgres.existingSecret/,
      ],
      [
        { 'nats.url': 'nats://n:4222', 'postgres.url': 'postgres://p', 'oidc.issuer': 'https://i', 'eventIngest.replicas': '17' },
        /at most 16: there are 16 partitions/,
      ],
      [
        { 'nats.url': 'nats://n:4222', 'postgres.url': 'postgres://p', 'oidc.issuer': 'https://i', 'sandbox.namespace': 'svc' },
        /sandbox.namespace must differ from the release's namespace/,
      ],
    ];
    for (const [set, message] of refusals) await expect(renderChart({ set })).rejects.toThrow(message);
  });

  it('every key in values.yaml is described by a comment', async () => {
    const lines = (await readFile(path.join(CHART_DIR, 'values.yaml'), 'utf8')).split('\n');
    const undescribed: string[] = [];
    lines.forEach((line, index) => {
      if (!/^\s*[A-Za-z][\w-]*:/.test(line)) return;
      let previous = index - 1;
      while (previous >= 0 && lines[previous]!.trim() === '') previous--;
      const above = lines[previous]?.trim() ?? '';
      if (!above.startsWith('#')) undescribed.push(`${index + 1}: ${line.trim()}`);
    });
    expect(undescribed).toEqual([]);
  });
});
