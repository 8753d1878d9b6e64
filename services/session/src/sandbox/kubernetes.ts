import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import path from 'node:path';
import { PassThrough, Readable, Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api, Exec, KubeConfig, Log, type V1Pod, type V1Status } from '@kubernetes/client-node';
import type { Logger } from '@svc/service-kit';
import type { ExecResult, Sandbox, SandboxHandle, SandboxProvider, SandboxSpec } from './provider.js';

/** The one container of a sandbox Pod. */
export const SANDBOX_CONTAINER = 'sandbox';

/** Where `startBackground` leaves the program's argv and environment for the Pod's start script. */
const START_FILE = '/var/run/svc/start.args';

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
export function sandboxPod(spec: SandboxSpec, image: string): V1Pod {
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
  const core = options.kubeConfig.makeApiClient(CoreV1Api);
  const exec = new Exec(options.kubeConfig);
  const logs = new Log(options.kubeConfig);
  const { namespace } = options;

  function open(handle: SandboxHandle): Sandbox {
    if (handle.provider !== 'kubernetes') throw new Error(`the kubernetes provider cannot open a ${handle.provider} sandbox`);
    const { pod, namespace: podNamespace } = handle;

    async function run(argv: readonly string[], stdin: Readable | null, timeoutMs: number): Promise<ExecResult> {
      let stdout = '';
      let stderr = '';
      const collect = (append: (text: string) => void) =>
        new Writable({
          write(chunk: Buffer, _encoding, done) {
            append(chunk.toString('utf8'));
            done();
          },
        });
      return new Promise<ExecResult>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`exec ${argv[0]} in pod ${pod} took longer than ${timeoutMs} ms`)), timeoutMs);
        const onStatus = (status: V1Status) => {
          clearTimeout(timer);
          resolve({ code: exitCodeOf(status), stdout, stderr });
        };
        exec
          .exec(
            podNamespace,
            pod,
            SANDBOX_CONTAINER,
            [...argv],
            collect((t) => (stdout += t)),
            collect((t) => (stderr += t)),
            stdin,
            false,
            onStatus,
          )
          .catch((err: unknown) => {
            clearTimeout(timer);
            reject(err instanceof Error ? err : new Error(String(err)));
          });
      });
    }

    async function remove(graceMs: number): Promise<void> {
      try {
        await core.deleteNamespacedPod({ name: pod, namespace: podNamespace, gracePeriodSeconds: Math.ceil(graceMs / 1000) });
      } catch (err) {
        if (statusCodeOf(err) === 404) return;
        throw err;
      }
      // Gone when the API no longer has it (the kubelet has stopped its containers).
      for (;;) {
        try {
          await core.readNamespacedPod({ name: pod, namespace: podNamespace });
        } catch (err) {
          if (statusCodeOf(err) === 404) return;
          throw err;
        }
        await sleep(200);
      }
    }

    async function upload(sandboxPath: string, content: Uint8Array | { fromFile: string }, mode = 0o644): Promise<void> {
      if (!path.posix.isAbsolute(sandboxPath) || path.posix.normalize(sandboxPath) !== sandboxPath)
        throw new Error(`sandbox path must be absolute and normalized, got ${JSON.stringify(sandboxPath)}`);
      const made = await run(['mkdir', '-p', path.posix.dirname(sandboxPath)], null, 30_000);
      if (made.code !== 0) throw new Error(`mkdir ${path.posix.dirname(sandboxPath)} in pod ${pod} exited with ${made.code}: ${made.stderr.trim()}`);
      const source = content instanceof Uint8Array ? Readable.from([Buffer.from(content)]) : createReadStream(content.fromFile);
      const stdin = source.pipe(new PassThrough());
      const written = await run(['dd', `of=${sandboxPath}`, 'bs=1M', 'status=none'], stdin, 300_000);
      if (written.code !== 0) throw new Error(`writing ${sandboxPath} in pod ${pod} failed (${written.code}): ${written.stderr.trim()}`);
      const chmod = await run(['chmod', mode.toString(8), sandboxPath], null, 30_000);
      if (chmod.code !== 0) throw new Error(`chmod ${sandboxPath} in pod ${pod} failed: ${chmod.stderr.trim()}`);
    }

    return {
      handle,
      resolvePath: (sandboxPath) => sandboxPath,
      upload,

      exec: (argv, execOptions = {}) => run(argv, null, execOptions.timeoutMs ?? 30_000),

      async startBackground(argv, env) {
        const lines = [...Object.entries(env).map(([name, value]) => `${name}=${value}`), ...argv];
        const bad = lines.find((line) => line.includes('\n'));
        if (bad !== undefined) throw new Error('an argument or environment value holds a newline, which a Pod start file cannot carry');
        if (argv[0]?.includes('=')) throw new Error(`the program's path must not contain "=": ${argv[0]}`);
        // Written aside and renamed, so the start script never reads half a file.
        await upload(`${START_FILE}.tmp`, Buffer.from(`${lines.join('\n')}\n`), 0o600);
        const moved = await run(['mv', `${START_FILE}.tmp`, START_FILE], null, 30_000);
        if (moved.code !== 0) throw new Error(`mv ${START_FILE} in pod ${pod} failed: ${moved.stderr.trim()}`);
        log.info({ pod }, 'sandbox program started');
      },

      async *logs({ tail, follow, signal }) {
        const lines = new PassThrough();
        const done = new Promise<void>((resolve) => lines.once('end', resolve));
        const controller = await logs.log(podNamespace, pod, SANDBOX_CONTAINER, lines, { follow, tailLines: tail });
        // Aborting the request does not end the stream it was piped into: end it here.
        const abort = () => {
          controller.abort();
          lines.end();
        };
        signal.addEventListener('abort', abort, { once: true });
        let pending = '';
        try {
          for await (const chunk of lines) {
            const parts = (pending + (chunk as Buffer).toString('utf8')).split('\n');
            pending = parts.pop() ?? '';
            yield* parts;
          }
          if (pending !== '') yield pending;
        } finally {
          signal.removeEventListener('abort', abort);
          controller.abort();
          await done.catch(() => {});
        }
      },

      stop: remove,
      destroy: remove,
    };
  }

  return {
    name: 'kubernetes',
    // Sandbox Pods sit behind the chart's "gateway only" NetworkPolicy.
    seals: true,
    open,
    async close() {
      // Pods outlive the session service; a restarted one finds them again.
    },
    async create(spec) {
      const body = sandboxPod(spec, spec.image ?? options.defaultImage);
      const name = body.metadata!.name!;
      await core.createNamespacedPod({ namespace, body });
      log.info({ pod: name, worker_id: spec.workerId }, 'sandbox pod created');
      const deadline = Date.now() + (options.startTimeoutMs ?? 120_000);
      for (;;) {
        const current = await core.readNamespacedPod({ name, namespace });
        const phase = current.status?.phase;
        if (phase === 'Running') break;
        if (phase === 'Failed' || phase === 'Succeeded') throw new Error(`sandbox pod ${name} ended before it ran (${phase})`);
        if (Date.now() > deadline) {
          await core.deleteNamespacedPod({ name, namespace }).catch(() => {});
          throw new Error(
            `sandbox pod ${name} was not running after ${Math.round((options.startTimeoutMs ?? 120_000) / 1000)} s (phase ${phase ?? 'unknown'})`,
          );
        }
        await sleep(200);
      }
      return open({ provider: 'kubernetes', namespace, pod: name });
    },
  };
}

/** The exit code an exec's final status carries (`Success` is 0). */
function exitCodeOf(status: V1Status): number {
  if (status.status === 'Success') return 0;
  const cause = status.details?.causes?.find((c) => c.reason === 'ExitCode');
  const code = Number(cause?.message);
  return Number.isInteger(code) ? code : 1;
}

function statusCodeOf(err: unknown): number | undefined {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'number' ? code : undefined;
}
