/**
 * What the pipeline benchmarks share: the stack as deployed (nats-server, Postgres with fsync
 * on, and every service as its own process from its built `main.js`), a keep-alive HTTP
 * client, and how figures are printed.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { connectBus, incomingBacklog, natsAuthorization, requestJson, type NatsConnection, type NatsServiceUser } from '@svc/bus';
import { launchNatsServer } from '@svc/nats-server';
import { LOCAL_SIGN_IN_CODE_FILE, subjects, type CreateWorkerRequestType, type CreateWorkerResultType, type IncomingEvent } from '@svc/protocol';
import { createLogger } from '@svc/service-kit';
import { freePort, startPostgres, startServiceProcess, startTestIssuer, waitFor, type ServiceProcess } from '@svc/test-support';

export interface PipelineOptions {
  /** The services' SVC_LOG_LEVEL. */
  logLevel: string;
  /** Write a CPU profile of each service into this directory. */
  profileDir?: string | undefined;
  /** Extra settings of the session service. */
  sessionEnv?: Record<string, string>;
  /** Extra settings of the gateway. */
  gatewayEnv?: Record<string, string>;
  /** More gateway processes beside the first, each with these extra settings (`gatewayUrls` lists them all). */
  moreGateways?: Array<Record<string, string>>;
  /** event-ingest replicas (default 1), sharing the partitions as a StatefulSet's Pods do. */
  ingestReplicas?: number;
  /** Extra settings of every service (tracing's endpoint, say). */
  env?: Record<string, string>;
  /** People sign in with the gateway's built-in issuer, as in the local stack (the console's one-click sign-in); `userToken` is one of its tokens. */
  localSignIn?: boolean;
}

/** A process's resident memory from /proc: now (`VmRSS`), or its peak so far (`VmHWM`). */
export async function rssMiB(pid: number, which: 'VmRSS' | 'VmHWM' = 'VmRSS'): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`${which}:\\s+(\\d+) kB`).exec(status)![1]) / 1024;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
export const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

export interface Pipeline {
  gatewayUrl: string;
  /** Every gateway's URL, the first one's first (`moreGateways`). */
  gatewayUrls: string[];
  /** The services' state directory (the session service keeps sandboxes under `sandboxes/`). */
  stateDir: string;
  /** The built-in issuer's sign-in code (with `localSignIn`), as the person at the machine reads it. */
  signInCode: string;
  nc: NatsConnection;
  postgresUrl: string;
  gateway: ServiceProcess;
  /** Every service process (event-ingest, session, control, gateway). */
  processes: ServiceProcess[];
  userToken: string;
  createWorker(options?: Omit<CreateWorkerRequestType, 'owner'>): Promise<CreateWorkerResultType>;
  /** Waits until event-ingest has stored everything posted so far, so one figure's backlog does not weigh on the next. */
  drained(): Promise<void>;
  stop(): Promise<void>;
}

export async function startPipeline(options: PipelineOptions): Promise<Pipeline> {
  const [nats, postgres, issuer] = await Promise.all([
    launchNatsServer({ authorization: natsAuthorization() }),
    startPostgres({ durable: true }),
    startTestIssuer('svc'),
  ]);
  const stateDir = await mkdtemp(path.join(tmpdir(), 'svc-bench-'));
  const ports = await Promise.all([{}, ...(options.moreGateways ?? [])].map(() => freePort()));
  const workerPorts = await Promise.all(ports.map(() => freePort()));
  const env = {
    SVC_NATS_URL: nats.url,
    SVC_DATABASE_URL: postgres.url,
    SVC_STATE_DIR: stateDir,
    SVC_LOG_LEVEL: options.logLevel,
    // The gateway signs who decides, control checks it (the others ignore it here).
    SVC_USER_ASSERTION_KEY: randomBytes(32).toString('base64url'),
    ...options.env,
  };
  const natsUser = (user: NatsServiceUser) => ({ SVC_NATS_USER: user, SVC_NATS_PASSWORD: nats.credentials[user].password });
  const quiet = { discardStdout: true, nodeArgs: options.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(options.profileDir)}`] : [] };
  const ingestReplicas = options.ingestReplicas ?? 1;
  const processes = [
    ...Array.from({ length: ingestReplicas }, (_, index) =>
      startServiceProcess(
        'event-ingest',
        {
          ...env,
          ...natsUser('event-ingest'),
          SVC_INSTANCE: `ingest-${index}`,
          SVC_INGEST_REPLICA_INDEX: String(index),
          SVC_INGEST_REPLICA_COUNT: String(ingestReplicas),
        },
        quiet,
      ),
    ),
    startServiceProcess(
      'session',
      {
        ...env,
        ...natsUser('session'),
        SVC_SANDBOXES_DIR: path.join(stateDir, 'sandboxes'),
        SVC_SANDBOX_CONTROL_PLANE_URL: `http://127.0.0.1:${workerPorts[0]!}`,
        ...options.sessionEnv,
      },
      quiet,
    ),
    startServiceProcess('control', { ...env, ...natsUser('control') }, quiet),
    ...[options.gatewayEnv, ...(options.moreGateways ?? [])].map((gatewayEnv, n) =>
      startServiceProcess(
        'gateway',
        {
          ...env,
          ...natsUser('gateway'),
          SVC_GATEWAY_PORT: String(ports[n]),
          SVC_GATEWAY_WORKER_PORT: String(workerPorts[n]),
          SVC_OIDC_ISSUER: issuer.issuer,
          SVC_OIDC_AUDIENCE: 'svc',
          SVC_RATE_LIMIT_MAX: '1000000000',
          // The benches' viewers are one user's; the cap has its own test.
          SVC_MAX_STREAMS_PER_USER: '1000000',
          ...(options.localSignIn ? { SVC_LOCAL_ISSUER: 'true' } : {}),
          ...gatewayEnv,
        },
        quiet,
      ),
    ),
  ];
  const gatewayUrls = ports.map((p) => `http://127.0.0.1:${p}`);
  const gatewayUrl = gatewayUrls[0]!;
  // A day long: a bench may run longer than a token's usual five minutes.
  let signInCode = '';
  let userToken = options.localSignIn ? '' : await issuer.sign({ sub: 'bench', exp: Math.floor(Date.now() / 1000) + 86_400 });
  const stopInfrastructure = async () => {
    await Promise.all(processes.map((p) => p.stop()));
    await Promise.all([nats.stop(), postgres.stop(), issuer.stop()]);
    await rm(stateDir, { recursive: true, force: true });
  };
  await waitFor(
    'every service up',
    async () => {
      if (!userToken) {
        const code = await readFile(path.join(stateDir, LOCAL_SIGN_IN_CODE_FILE), 'utf8').catch(() => undefined);
        if (code === undefined) return false;
        signInCode = code.trim();
        const local = await fetch(`${gatewayUrl}/v1/local/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ code: code.trim() }),
        }).catch(() => undefined);
        if (local?.status !== 200) return false;
        userToken = ((await local.json()) as { token: string }).token;
      }
      const statuses = await Promise.all(
        gatewayUrls.map(async (url) => {
          const response = await fetch(`${url}/v1/status`, { headers: { authorization: `Bearer ${userToken}` } }).catch(() => undefined);
          return response?.status === 200 ? ((await response.json()) as { status: string }).status : 'unreachable';
        }),
      );
      return statuses.every((status) => status === 'ok');
    },
    60_000,
    200,
  ).catch(async (err: unknown) => {
    await stopInfrastructure();
    throw err;
  });
  const nc: NatsConnection = await connectBus({
    servers: nats.url,
    name: 'bench',
    logger: createLogger({ name: 'bench', level: 'silent' }),
    credentials: nats.credentials.operator,
  });
  return {
    gatewayUrl,
    gatewayUrls,
    stateDir,
    nc,
    postgresUrl: postgres.url,
    gateway: processes.find((p) => p.service === 'gateway')!,
    processes,
    userToken,
    signInCode,
    createWorker: (options = {}) => requestJson<CreateWorkerResultType>(nc, subjects.rpc.createWorker, { owner: 'bench', ...options }),
    async drained() {
      await waitFor('the incoming queue to drain', async () => (await incomingBacklog(nc)) === 0, 600_000, 200);
    },
    async stop() {
      await nc.close();
      await stopInfrastructure();
    },
  };
}

/** Keep-alive connections for the posting clients, at most 64 at a time (a queue forms beyond). */
export const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

/** One HTTP exchange over the keep-alive agent: the status and the JSON answer (if any). */
export function call(
  url: string,
  options: { method?: 'GET' | 'POST' | 'DELETE'; token: string; body?: unknown; agent?: http.Agent },
): Promise<{ status: number; body: unknown }> {
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  const headers: http.OutgoingHttpHeaders = { authorization: `Bearer ${options.token}` };
  if (payload !== undefined) Object.assign(headers, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) });
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method: options.method ?? 'GET', agent: options.agent ?? agent, headers }, (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString()));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text ? (JSON.parse(text) as unknown) : undefined }));
    });
    request.on('error', reject);
    request.end(payload);
  });
}

/** Posts events as the worker's sidecar; anything but 202 is an error. */
export async function post(pipeline: Pipeline, worker: CreateWorkerResultType, body: unknown, gatewayUrl = pipeline.gatewayUrl): Promise<void> {
  const answer = await call(`${gatewayUrl}/v1/workers/${worker.worker_id}/sdk-events`, { method: 'POST', token: worker.token, body });
  if (answer.status !== 202) throw new Error(`POST sdk-events answered ${answer.status}: ${JSON.stringify(answer.body)}`);
}

/**
 * Each worker POSTs batches of `batch` events, one after another, until `deadline`
 * (`performance.now()` time); answers how many events were posted (each answered 202).
 */
export async function postBatchesUntil(
  pipeline: Pipeline,
  workers: CreateWorkerResultType[],
  deadline: number,
  batch: number,
  eventOf: (uid: string) => unknown,
): Promise<number> {
  let posted = 0;
  await Promise.all(
    workers.map(async (worker) => {
      for (let n = 0; performance.now() < deadline; n += batch) {
        await post(pipeline, worker, { events: Array.from({ length: batch }, (_, i) => eventOf(`${worker.worker_id}:${n + i}`)) });
        posted += batch;
      }
    }),
  );
  return posted;
}

export function print(line: string): void {
  process.stdout.write(`\n${line}\n`);
}

/** Prints a figure against its target; answers whether it is met. */
export function verdict(name: string, value: number, relation: '≥' | '≤', target: number): boolean {
  const met = relation === '≥' ? value >= target : value <= target;
  process.stdout.write(`${name}: ${value.toFixed(2)} (target ${relation} ${target}: ${met ? 'met' : 'NOT met'})\n`);
  return met;
}

/** `cpuSeconds`'s readings of the whole machine (with `machine: true`), in CPU seconds over all its cores. */
const MACHINE_BUSY = 'the machine: every process, all cores';
const MACHINE_STOLEN = 'the machine: stolen by the hypervisor';
/** USER_HZ on Linux: /proc counts CPU time in these ticks. */
const TICKS_PER_SECOND = 100;

/** A process's name, parent and CPU seconds (utime + stime) from its `/proc/<pid>/stat` line. */
export function parseProcessStat(stat: string): { comm: string; ppid: number; cpuSeconds: number } {
  // pid (comm) state ppid … utime(14) stime(15): comm may hold spaces, so split after its ')'.
  const close = stat.lastIndexOf(')');
  const fields = stat.slice(close + 2).split(' ');
  return { comm: stat.slice(stat.indexOf('(') + 1, close), ppid: Number(fields[1]), cpuSeconds: (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND };
}

/**
 * The processes of each part of the pipeline, from /proc: the services by name (their
 * processes, or a wrapper's child), nats-server, every Postgres process together, and this
 * process with its children (the bench's client).
 */
async function pipelineProcesses(pipeline: Pipeline, benchProcess = 'bench client'): Promise<Array<{ pid: string; name: string; cpuSeconds: number }>> {
  const names = new Map<number, string>(pipeline.processes.map((p) => [p.pid, p.service]));
  // This process and the clients it starts (autocannon) count together, unless this process
  // is named apart (it may be serving a baseline itself).
  names.set(process.pid, benchProcess);
  const found = [];
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    if (!stat.includes(')')) continue; // gone meanwhile
    const { comm, ppid, cpuSeconds } = parseProcessStat(stat);
    // By name first: nats-server is this process's child, and must not count as the client.
    const name =
      comm === 'postgres'
        ? 'postgres (all processes)'
        : comm === 'nats-server'
          ? 'nats-server'
          : (names.get(Number(pid)) ?? (ppid === process.pid ? 'bench client' : names.get(ppid)));
    if (name) found.push({ pid, name, cpuSeconds });
  }
  return found;
}

/**
 * CPU seconds used so far by each part of the pipeline (`pipelineProcesses`). Two readings a
 * while apart give each part's share of a core: which one is at 100 % when the pipeline saturates.
 */
export async function cpuSeconds(pipeline: Pipeline, options: { benchProcess?: string; machine?: boolean } = {}): Promise<Map<string, number>> {
  const totals = new Map<string, number>();
  if (options.machine) {
    // The whole machine, every core (/proc/stat's first line): whether the cores are full when
    // no one process is, and what the hypervisor took from this VM meanwhile.
    const [user, nice, system, , , irq, softirq, steal] = (await readFile('/proc/stat', 'utf8')).split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    totals.set(MACHINE_BUSY, (user! + nice! + system! + irq! + softirq!) / TICKS_PER_SECOND);
    totals.set(MACHINE_STOLEN, steal! / TICKS_PER_SECOND);
  }
  for (const { name, cpuSeconds: seconds } of await pipelineProcesses(pipeline, options.benchProcess)) {
    totals.set(name, (totals.get(name) ?? 0) + seconds);
  }
  return totals;
}

/**
 * How often each part's threads have gone to sleep so far, waiting for something (voluntary
 * context switches, every thread of every process): each is a wake-up later. Beside the CPU it
 * tells what one wake-up costs a process.
 */
export async function wakeUps(pipeline: Pipeline): Promise<Map<string, number>> {
  const totals = new Map<string, number>();
  for (const { pid, name } of await pipelineProcesses(pipeline)) {
    const threads = await readdir(`/proc/${pid}/task`).catch(() => []);
    for (const thread of threads) {
      const status = await readFile(`/proc/${pid}/task/${thread}/status`, 'utf8').catch(() => '');
      const switches = /^voluntary_ctxt_switches:\s*(\d+)/m.exec(status);
      if (switches) totals.set(name, (totals.get(name) ?? 0) + Number(switches[1]));
    }
  }
  return totals;
}

/**
 * Each part's share of one core between two `cpuSeconds` readings `seconds` apart, busiest
 * first; with two `wakeUps` readings, also its wake-ups a second and its CPU per wake-up.
 */
export function cpuShares(
  before: Map<string, number>,
  after: Map<string, number>,
  seconds: number,
  wakes?: { before: Map<string, number>; after: Map<string, number> },
): Array<Record<string, string>> {
  return [...after]
    .map(([name, used]) => ({ name, cpu: used - (before.get(name) ?? 0), woken: wakes ? (wakes.after.get(name) ?? 0) - (wakes.before.get(name) ?? 0) : 0 }))
    .sort((a, b) => b.cpu - a.cpu)
    .map(({ name, cpu, woken }) => ({
      process: name,
      'CPU % of a core': ((cpu / seconds) * 100).toFixed(0),
      ...(wakes && woken > 0 ? { 'wake-ups/s': (woken / seconds).toFixed(0), 'CPU µs per wake-up': ((cpu / woken) * 1e6).toFixed(0) } : {}),
    }));
}

/** A short assistant message, the bench's usual event. */
export const BENCH_TEXT = 'The tests pass now. I changed the parser to keep the raw line when a field is missing. ';
export const assistantEvent = (uid: string): IncomingEvent => ({
  type: 'assistant',
  uid,
  ts: new Date().toISOString(),
  data: { text: BENCH_TEXT, message_id: 'msg_bench' },
});
