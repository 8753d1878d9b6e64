import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@svc/service-kit';
import { collect } from '../../test/collect.js';
import { waitFor } from '@svc/test-support';
import { renderChart } from '@svc/test-support/helm';
import { startKubernetesStandIn, type KubernetesStandIn, type StandInRule } from '../../test/kubernetes-stand-in.js';
import { ADMIN, startSessionFixture } from '../../test/fixture.js';
import { createKubernetesProvider, podNameOf, SANDBOX_START_SCRIPT } from './kubernetes.js';

const logger = createLogger({ name: 'test', level: 'silent' });

/** The rules of the session service's Role as the Helm chart renders it: the permissions the provider gets in a cluster. */
async function rulesOfTheChartsRole(): Promise<StandInRule[]> {
  const [role] = (await renderChart({ valuesFiles: ['distributed-external.yaml'], showOnly: ['templates/session-rbac.yaml'] })).filter(
    (m) => m.kind === 'Role',
  );
  return (role!['rules'] as Array<{ resources: string[]; verbs: string[] }>).map(({ resources, verbs }) => ({ resources, verbs }));
}

function kubeConfigFor(url: string, token: string): KubeConfig {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: 'stand-in', server: url, skipTLSVerify: true }],
    users: [{ name: 'session', token }],
    contexts: [{ name: 'stand-in', cluster: 'stand-in', user: 'session' }],
    currentContext: 'stand-in',
  });
  return kubeConfig;
}

describe("kubernetes sandboxes, through the real client against a stand-in of the Kubernetes API, with the permissions of the Helm chart's Role", () => {
  let api: KubernetesStandIn;
  beforeAll(async () => {
    api = await startKubernetesStandIn({ tokens: { 'session-sa': await rulesOfTheChartsRole(), 'read-only': [{ resources: ['pods'], verbs: ['get'] }] } });
  });
  afterAll(() => api?.stop());

  const provider = (token = 'session-sa') =>
    createKubernetesProvider({ kubeConfig: kubeConfigFor(api.url, token), namespace: 'svc-sandboxes', defaultImage: 'svc-sandbox:test', logger });

  it('creates a hardened Pod per worker, uploads through exec (no shell), starts a program with exactly its environment, follows its logs, deletes it', async () => {
    const sandbox = await provider().create({ workerId: 'wrk_K8s_One' });
    expect(sandbox.handle).toEqual({ provider: 'kubernetes', namespace: 'svc-sandboxes', pod: podNameOf('wrk_K8s_One') });
    const [pod] = api.pods();
    expect(pod!.metadata!.labels).toMatchObject({ 'svc.dev/worker-id': 'wrk_K8s_One' });
    expect(pod!.spec).toMatchObject({ automountServiceAccountToken: false, securityContext: { runAsNonRoot: true } });
    expect(pod!.spec!.containers[0]).toMatchObject({
      image: 'svc-sandbox:test',
      command: ['/bin/sh', '-c', SANDBOX_START_SCRIPT],
      securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
    });

    const tricky = 'a value with $(touch /tmp/pwned) and `backticks`';
    await sandbox.upload('/etc/svc/sidecar.json', Buffer.from(tricky), 0o600);
    await sandbox.upload('/usr/local/bin/hello', { fromFile: '/bin/echo' }, 0o755);
    expect(await sandbox.exec(['cat', '/etc/svc/sidecar.json'])).toEqual({ code: 0, stdout: tricky, stderr: '' });
    expect((await sandbox.exec(['stat', '-c', '%a', '/etc/svc/sidecar.json'])).stdout.trim()).toBe('600');
    expect((await sandbox.exec(['hello', 'from', 'a', 'pod'])).stdout).toBe('from a pod\n');
    expect((await sandbox.exec(['ls', '/tmp/pwned'])).code).not.toBe(0);
    expect((await sandbox.exec(['sh', '-c', 'exit 7'])).code).toBe(7);

    await sandbox.startBackground(
      ['sh', '-c', 'echo "GIVEN=$GIVEN"; echo "$1"; trap "echo got-term; exit 0" TERM; while true; do sleep 0.05; done', 'sh', tricky],
      { PATH: '/usr/bin:/bin', GIVEN: 'yes' },
    );
    const abort = new AbortController();
    const seen: string[] = [];
    const following = (async () => {
      for await (const line of sandbox.logs({ tail: 100, follow: true, signal: abort.signal })) seen.push(line);
    })();
    await waitFor("the program's lines", () => seen.includes(tricky));
    expect(seen.slice(0, 2)).toEqual(['GIVEN=yes', tricky]);
    abort.abort();
    await following;
    expect(await collect(sandbox.logs({ tail: 1, follow: false, signal: new AbortController().signal }))).toEqual([tricky]);

    await sandbox.destroy(5000);
    expect(api.pods()).toEqual([]);
    await sandbox.destroy(5000); // already gone: harmless
    expect(api.requests).toContain(`delete pods svc-sandboxes/${podNameOf('wrk_K8s_One')} 200`);
  });

  it("with a service account that may not create Pods, the spawn step fails with Kubernetes' 403", async () => {
    await expect(provider('read-only').create({ workerId: 'wrk_forbidden' })).rejects.toMatchObject({ code: 403 });
    await expect(provider('unknown-token').create({ workerId: 'wrk_forbidden' })).rejects.toMatchObject({ code: 401 });
    expect(api.pods()).toEqual([]);
  });

  it('the spawn pipeline on the kubernetes provider: step 6.5 uploads the sidecar and its config into the Pod and starts it; DELETE removes the Pod', async () => {
    const fixture = await startSessionFixture({}, {}, provider());
    try {
      await fixture.writeTemplate(
        'k8s',
        `[agent]\ncommand = "/bin/echo"\nimage = "svc-sandbox:1"\n[model]\napi = "anthropic"\n[sidecar]\nadapter = "generic"\n`,
      );
      const created = await fixture.create(ADMIN, { template: 'k8s' });
      await fixture.waitForStatus(created.id, 'running', 60_000);
      const pod = api.pods().find((p) => p.metadata!.labels!['svc.dev/worker-id'] === created.worker_id)!;
      expect(pod.spec!.containers[0]!.image).toBe('svc-sandbox:1');
      const sandbox = provider().open({ provider: 'kubernetes', namespace: 'svc-sandboxes', pod: pod.metadata!.name! });
      const config = JSON.parse((await sandbox.exec(['cat', '/etc/svc/sidecar.json'])).stdout) as { worker_id: string; auth_token_file: string };
      expect(config).toMatchObject({ worker_id: created.worker_id, auth_token_file: '/var/run/svc/token', model_proxy: { apis: ['anthropic'] } });
      // The sandbox Pod holds no key and names no Secret: the model proxy's key is the gateway's.
      expect(JSON.stringify(pod.spec)).not.toMatch(/secret|API_KEY/i);
      expect(JSON.stringify(config)).not.toMatch(/API_KEY/);
      expect((await sandbox.exec(['stat', '-c', '%a %s', '/usr/local/bin/svc-sidecar'])).stdout.trim()).toMatch(/^755 \d{7,}$/);
      await waitFor(
        "the sidecar starting, in the Pod's log",
        async () =>
          (await collect(sandbox.logs({ tail: 50, follow: false, signal: new AbortController().signal }))).some((l) => l.startsWith('svc-sidecar: starting')),
        20_000,
      );
      expect(await fixture.remove(ADMIN, created.id)).toMatchObject({ status: 'stopped' });
      expect(api.pods().some((p) => p.metadata!.name === pod.metadata!.name)).toBe(false);
    } finally {
      await fixture.stop();
    }
  });
});
