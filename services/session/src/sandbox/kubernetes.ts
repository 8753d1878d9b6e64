import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api, Exec, KubeConfig, Log, type V1Pod } from '@kubernetes/client-node';
import type { Logger } from '@svc/service-kit';
import { openPod, SANDBOX_CONTAINER, START_FILE, type PodClients } from './kubernetes-pod.js';
import type { Sandbox, SandboxHandle, SandboxProvider, SandboxSpec } from './provider.js';

/**
 * The sandbox container's command: wait for the start file, read it one line per argument,
 * and `exec env -i KEY=VALUE… program args…` (so the program is the container's PID 1 and gets
 * Kubernetes' SIGTERM itself). The script is a constant: values are read as data (`read -r`,
 * `"$@"`), never spliced into code.
 */
export const SANDBOX_START_SCRIPT = [
  `until [ -f ${START_FILE} ]; do sleep 0.1; done`,
  'set --',
  `while IFS= read -r arg; do set -- "$@" "$arg"; done < ${START_FILE}`,
  'exec env -i "$@"',
].join('\n');

/** The sandbox's own writable directories: one emptyDir each (the rest of the image is read-only). */
const SANDBOX_VOLUMES: Array<{ name: string; mountPath: string }> = [
  { name: 'workspace', mountPath: '/workspace' },
  { name: 'home', mountPath: '/home/agent' },
  { name: 'svc-config', mountPath: '/etc/svc' },
  { name: 'svc-run', mountPath: '/var/run/svc' },
  { name: 'svc-bin', mountPath: '/usr/local/bin' },
  { name: 'svc-state', mountPath: '/var/lib/svc-sidecar' },
  { name: 'tmp', mountPath: '/tmp' },
];

export interface KubernetesProviderOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  /** The image when a template names none. */
  defaultImage: string;
  /** How long a Pod may take to be Running. */
  startTimeoutMs?: number;
  logger: Logger;
}

/** A kubeconfig from `SVC_KUBECONFIG` (a file), else the Pod's own service account (in-cluster). */
export function loadKubeConfig(file: string | undefined): KubeConfig {
  const kubeConfig = new KubeConfig();
  if (file) kubeConfig.loadFromFile(file);
  else kubeConfig.loadFromCluster();
  return kubeConfig;
}

/** A Pod name for a worker: names are lowercase DNS labels, worker ids are not, so a hash. */
export function podNameOf(workerId: string): string {
  return `svc-sandbox-${createHash('sha256').update(workerId).digest('hex').slice(0, 16)}`;
}

/** The Pod of a worker's sandbox: non-root, no service account token, every capability dropped. */
function sandboxPod(spec: SandboxSpec, image: string): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: podNameOf(spec.workerId),
      labels: { 'app.kubernetes.io/managed-by': 'svc', 'app.kubernetes.io/component': 'sandbox', 'svc.dev/worker-id': spec.workerId },
    },
    spec: {
      restartPolicy: 'Never',
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      securityContext: { runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, fsGroup: 1000, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        {
          name: SANDBOX_CONTAINER,
          image,
          command: ['/bin/sh', '-c', SANDBOX_START_SCRIPT],
          workingDir: '/workspace',
          securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
          volumeMounts: SANDBOX_VOLUMES.map(({ name, mountPath }) => ({ name, mountPath })),
        },
      ],
      volumes: SANDBOX_VOLUMES.map(({ name }) => ({ name, emptyDir: {} })),
    },
  };
}

/**
 * Sandboxes as Pods, one per worker, through the Kubernetes API: create, exec (uploads are
 * `dd of=<path>` fed on stdin, never a shell), logs, delete. The session service's service
 * account needs exactly: pods create/get/delete, pods/exec create/get, pods/log get (the Helm
 * chart's Role). Stopping a Pod deletes it: its files go with it.
 */
export function createKubernetesProvider(options: KubernetesProviderOptions): SandboxProvider {
  const log = options.logger.child({ component: 'kubernetes-sandbox', namespace: options.namespace });
  const clients: PodClients = {
    core: options.kubeConfig.makeApiClient(CoreV1Api),
    exec: new Exec(options.kubeConfig),
    logs: new Log(options.kubeConfig),
    log,
  };
  const open = (handle: SandboxHandle): Sandbox => openPod(clients, handle);

  return {
    name: 'kubernetes',
    // Sandbox Pods sit behind the chart's "gateway only" NetworkPolicy.
    seals: true,
    open,
    async close() {
      // Pods outlive the session service; a restarted one finds them again.
    },
    async create(spec) {
      const name = await startPod(clients, options, spec);
      return open({ provider: 'kubernetes', namespace: options.namespace, pod: name });
    },
  };
}

/** Creates the worker's Pod and waits until it runs; one that does not run in time is deleted. */
async function startPod({ core, log }: PodClients, options: KubernetesProviderOptions, spec: SandboxSpec): Promise<string> {
  const { namespace } = options;
  const body = sandboxPod(spec, spec.image ?? options.defaultImage);
  const name = body.metadata!.name!;
  await core.createNamespacedPod({ namespace, body });
  log.info({ pod: name, worker_id: spec.workerId }, 'sandbox pod created');
  const deadline = Date.now() + (options.startTimeoutMs ?? 120_000);
  for (;;) {
    const current = await core.readNamespacedPod({ name, namespace });
    const phase = current.status?.phase;
    if (phase === 'Running') return name;
    if (phase === 'Failed' || phase === 'Succeeded') throw new Error(`sandbox pod ${name} ended before it ran (${phase})`);
    if (Date.now() > deadline) {
      await core.deleteNamespacedPod({ name, namespace }).catch(() => {});
      throw new Error(`sandbox pod ${name} was not running after ${Math.round((options.startTimeoutMs ?? 120_000) / 1000)} s (phase ${phase ?? 'unknown'})`);
    }
    await sleep(200);
  }
}
