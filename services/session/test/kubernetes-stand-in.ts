import { spawn, type ChildProcess } from 'node:child_process';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { WebSocketServer, type WebSocket } from 'ws';
import { bubblewrapArgs, programOf, readChildPid } from '../src/sandbox/local.js';

/** What a token may do, as an RBAC Role says it: resources (`pods`, `pods/exec`, `pods/log`) and verbs. */
export interface StandInRule {
  resources: string[];
  verbs: string[];
}

export interface KubernetesStandIn {
  url: string;
  /** Every request as `<verb> <resource> <namespace>/<name>` with its answer's status. */
  requests: string[];
  /** The Pods the API has now, by namespace/name. */
  pods(): V1Pod[];
  stop(): Promise<void>;
}

/** How often a followed Pod log is read for new lines (the stand-in polls its file; the kubelet streams). */
const LOG_FOLLOW_POLL_MS = 50;

interface RunningPod {
  pod: V1Pod;
  dir: string;
  logFile: string;
  process?: ChildProcess;
  childPid?: number;
  exited?: Promise<void>;
}

/**
 * A stand-in for the Kubernetes API server, enough for the kubernetes sandbox provider and
 * spoken to by the real `@kubernetes/client-node` over HTTP: Pods (create, get, delete), exec
 * over WebSocket (`v5.channel.k8s.io`: stdin with its close signal, stdout, stderr, the exit
 * status), and logs (tail, follow). Bearer tokens map to RBAC-like rules; anything else is 401
 * or 403 as the real server answers. A Pod's container really runs: the host's programs under
 * bubblewrap, each emptyDir volume a directory of its own, `command` as given (the image is
 * not pulled: the host is the image).
 */
export async function startKubernetesStandIn(options: { tokens: Record<string, StandInRule[]> }): Promise<KubernetesStandIn> {
  const work = await mkdtemp(path.join(tmpdir(), 'svc-kube-'));
  const pods = new Map<string, RunningPod>();
  const requests: string[] = [];

  const status = (code: number, reason: string, message: string) => ({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    code,
  });
  const send = (response: ServerResponse, code: number, body: unknown) => {
    response.writeHead(code, { 'content-type': 'application/json' });
    response.end(JSON.stringify(body));
  };

  type Route = { namespace: string; name?: string; resource: 'pods' | 'pods/exec' | 'pods/log' };
  const route = (url: URL): Route | undefined => {
    const match = /^\/api\/v1\/namespaces\/([a-z0-9-]+)\/pods(?:\/([a-z0-9-]+)(?:\/(exec|log))?)?$/.exec(url.pathname);
    if (!match) return undefined;
    return { namespace: match[1]!, ...(match[2] ? { name: match[2] } : {}), resource: match[3] ? (`pods/${match[3]}` as Route['resource']) : 'pods' };
  };
  /** Authentication and authorization, as the API server does them: 401 without a known token, 403 without a rule. */
  const authorize = (request: IncomingMessage, resource: string, verb: string): { code: number; body: unknown } | undefined => {
    const token = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    const rules = token === undefined ? undefined : options.tokens[token];
    if (!rules) return { code: 401, body: status(401, 'Unauthorized', 'Unauthorized') };
    if (!rules.some((rule) => rule.resources.includes(resource) && rule.verbs.includes(verb))) {
      return { code: 403, body: status(403, 'Forbidden', `${resource} is forbidden: cannot ${verb} resource "${resource}"`) };
    }
    return undefined;
  };
  const key = (namespace: string, name: string) => `${namespace}/${name}`;

  function bindsOf(running: RunningPod) {
    const container = running.pod.spec!.containers[0]!;
    return (container.volumeMounts ?? []).map((mount) => ({ host: path.join(running.dir, 'volumes', mount.name), inside: mount.mountPath }));
  }

  function sandboxed(running: RunningPod, argv: string[], extra: string[] = []): { file: string; args: string[] } {
    const workingDir = running.pod.spec!.containers[0]!.workingDir;
    return { file: 'bwrap', args: [...bubblewrapArgs(bindsOf(running)), ...(workingDir ? ['--chdir', workingDir] : []), ...extra, '--', ...argv] };
  }

  const containerEnv = (pod: V1Pod) => ({
    PATH: '/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin',
    ...Object.fromEntries((pod.spec!.containers[0]!.env ?? []).map((v) => [v.name, v.value ?? ''])),
  });

  async function createPod(namespace: string, pod: V1Pod): Promise<{ code: number; body: unknown }> {
    const name = pod.metadata?.name;
    if (!name || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name) || name.length > 63)
      return { code: 422, body: status(422, 'Invalid', `Pod "${name}" is invalid: metadata.name`) };
    if (pods.has(key(namespace, name))) return { code: 409, body: status(409, 'AlreadyExists', `pods "${name}" already exists`) };
    const container = pod.spec?.containers?.[0];
    if (!container?.command?.length)
      return { code: 422, body: status(422, 'Invalid', 'spec.containers[0].command: the stand-in runs command, it has no images') };
    const dir = path.join(work, namespace, name);
    for (const mount of container.volumeMounts ?? []) await mkdir(path.join(dir, 'volumes', mount.name), { recursive: true });
    const stored: V1Pod = { ...pod, metadata: { ...pod.metadata, namespace, uid: `uid-${name}`, creationTimestamp: new Date() }, status: { phase: 'Pending' } };
    const running: RunningPod = { pod: stored, dir, logFile: path.join(dir, 'container.log') };
    pods.set(key(namespace, name), running);
    const output = createWriteStream(running.logFile, { flags: 'a' });
    await new Promise((resolve) => output.once('open', resolve));
    const { file, args } = sandboxed(running, container.command, ['--info-fd', '3']);
    const child = spawn(file, [...args, ...(container.args ?? [])], { env: containerEnv(stored), stdio: ['ignore', output, output, 'pipe'], detached: true });
    running.process = child;
    running.exited = new Promise((resolve) =>
      child.once('exit', (code) => {
        stored.status = { phase: code === 0 ? 'Succeeded' : 'Failed' };
        output.end();
        resolve();
      }),
    );
    running.childPid = await readChildPid(child.stdio[3] as NodeJS.ReadableStream);
    if (stored.status?.phase === 'Pending') stored.status = { phase: 'Running' };
    return { code: 201, body: stored };
  }

  async function deletePod(running: RunningPod, graceSeconds: number): Promise<void> {
    const child = running.process;
    if (child && child.exitCode === null && child.signalCode === null) {
      // The kubelet sends SIGTERM to the container's PID 1, and SIGKILL after the grace period.
      process.kill(running.childPid ? await programOf(running.childPid) : child.pid!, 'SIGTERM');
      const graceOver = new AbortController();
      await Promise.race([running.exited, sleep(graceSeconds * 1000, undefined, { signal: graceOver.signal })]);
      graceOver.abort();
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
      await running.exited;
    }
    pods.delete(key(running.pod.metadata!.namespace!, running.pod.metadata!.name!));
    await rm(running.dir, { recursive: true, force: true });
  }

  async function streamLog(running: RunningPod, url: URL, response: ServerResponse): Promise<void> {
    response.writeHead(200, { 'content-type': 'text/plain' });
    const text = await readFile(running.logFile, 'utf8');
    let offset = Buffer.byteLength(text);
    const tail = url.searchParams.get('tailLines');
    const lines = text.split('\n');
    const last = lines.pop() ?? '';
    const shown = tail === null ? lines : lines.slice(Math.max(0, lines.length - Number(tail)));
    response.write(shown.map((line) => `${line}\n`).join('') + last);
    let closed = false;
    response.once('close', () => (closed = true));
    while (url.searchParams.get('follow') === 'true' && !closed) {
      const size = await stat(running.logFile)
        .then((s) => s.size)
        .catch(() => offset);
      if (size > offset) {
        await new Promise<void>((resolve) =>
          createReadStream(running.logFile, { start: offset, end: size - 1 })
            .on('data', (chunk) => response.write(chunk))
            .on('end', resolve),
        );
        offset = size;
        continue;
      }
      if (running.pod.status?.phase !== 'Running' && running.pod.status?.phase !== 'Pending') break;
      await sleep(LOG_FOLLOW_POLL_MS);
    }
    response.end();
  }

  const server = createServer((request, response) => {
    void (async () => {
      const url = new URL(request.url ?? '/', 'http://stand-in');
      const target = route(url);
      const verb = request.method === 'POST' ? 'create' : request.method === 'DELETE' ? 'delete' : target?.name ? 'get' : 'list';
      const answer = (code: number, body: unknown) => {
        requests.push(`${verb} ${target?.resource ?? url.pathname} ${target?.namespace ?? ''}/${target?.name ?? ''} ${code}`);
        send(response, code, body);
      };
      if (!target) return answer(404, status(404, 'NotFound', 'the server could not find the requested resource'));
      const refused = authorize(request, target.resource, verb);
      if (refused) return answer(refused.code, refused.body);
      const running = target.name ? pods.get(key(target.namespace, target.name)) : undefined;
      if (target.resource === 'pods' && request.method === 'POST' && !target.name) {
        const chunks: Buffer[] = [];
        for await (const chunk of request) chunks.push(chunk as Buffer);
        const created = await createPod(target.namespace, JSON.parse(Buffer.concat(chunks).toString('utf8')) as V1Pod);
        return answer(created.code, created.body);
      }
      if (!running) return answer(404, status(404, 'NotFound', `pods "${target.name}" not found`));
      if (target.resource === 'pods/log' && verb === 'get') {
        requests.push(`get pods/log ${target.namespace}/${target.name} 200`);
        return streamLog(running, url, response);
      }
      if (target.resource === 'pods' && verb === 'get') return answer(200, running.pod);
      if (target.resource === 'pods' && verb === 'delete') {
        const chunks: Buffer[] = [];
        for await (const chunk of request) chunks.push(chunk as Buffer);
        const body = chunks.length ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { gracePeriodSeconds?: number }) : {};
        const grace = Number(url.searchParams.get('gracePeriodSeconds') ?? body.gracePeriodSeconds ?? 30);
        answer(200, running.pod);
        return deletePod(running, grace);
      }
      return answer(405, status(405, 'MethodNotAllowed', `${request.method} is not supported here`));
    })().catch((err: unknown) => send(response, 500, status(500, 'InternalError', String(err))));
  });

  // exec: a WebSocket upgrade of GET …/exec, authorized as "create pods/exec" (as Kubernetes ≥ 1.31 does).
  const sockets = new WebSocketServer({ noServer: true, handleProtocols: (offered) => (offered.has('v5.channel.k8s.io') ? 'v5.channel.k8s.io' : false) });
  server.on('upgrade', (request, socket, head) => {
    const url = new URL(request.url ?? '/', 'http://stand-in');
    const target = route(url);
    const refuse = (code: number, body: unknown) => {
      requests.push(`create pods/exec ${target?.namespace ?? ''}/${target?.name ?? ''} ${code}`);
      socket.end(`HTTP/1.1 ${code} Refused\r\ncontent-type: application/json\r\n\r\n${JSON.stringify(body)}`);
    };
    if (target?.resource !== 'pods/exec' || !target.name) return refuse(404, status(404, 'NotFound', 'not found'));
    const refused = authorize(request, 'pods/exec', 'create');
    if (refused) return refuse(refused.code, refused.body);
    const running = pods.get(key(target.namespace, target.name));
    if (!running || running.pod.status?.phase !== 'Running') return refuse(400, status(400, 'BadRequest', 'pod is not running'));
    requests.push(`create pods/exec ${target.namespace}/${target.name} 101`);
    sockets.handleUpgrade(request, socket, head, (ws) => runExec(ws, running, url.searchParams.getAll('command')));
  });

  function runExec(ws: WebSocket, running: RunningPod, command: string[]): void {
    const { file, args } = sandboxed(running, command);
    const child = spawn(file, args, { env: containerEnv(running.pod), stdio: ['pipe', 'pipe', 'pipe'] });
    const frame = (channel: number, data: Buffer) => ws.send(Buffer.concat([Buffer.from([channel]), data]));
    child.stdout.on('data', (data: Buffer) => frame(1, data));
    child.stderr.on('data', (data: Buffer) => frame(2, data));
    child.stdin.on('error', () => {});
    ws.on('message', (data: Buffer) => {
      if (data[0] === 0) child.stdin.write(data.subarray(1));
      else if (data[0] === 255 && data[1] === 0) child.stdin.end();
    });
    ws.on('close', () => child.kill('SIGKILL'));
    child.on('close', (code) => {
      const result =
        code === 0
          ? { metadata: {}, status: 'Success' }
          : {
              metadata: {},
              status: 'Failure',
              message: `command terminated with non-zero exit code: ${code}`,
              reason: 'NonZeroExitCode',
              details: { causes: [{ reason: 'ExitCode', message: String(code ?? 1) }] },
            };
      frame(3, Buffer.from(JSON.stringify(result)));
      ws.close(1000);
    });
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    pods: () => [...pods.values()].map((p) => p.pod),
    async stop() {
      for (const running of [...pods.values()]) await deletePod(running, 0);
      sockets.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await rm(work, { recursive: true, force: true });
    },
  };
}
