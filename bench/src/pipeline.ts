/**
 * What the pipeline benchmarks share: the stack as deployed (nats-server, Postgres with fsync
 * on, and every service as its own process from its built `main.js`), a keep-alive HTTP
 * client, and how figures are printed.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { connectBus, incomingBacklog, natsAuthorization, requestJson, type NatsConnection, type NatsServiceUser } from '@svc/bus';
import { launchNatsServer } from '@svc/nats-server';
import { subjects, type CreateWorkerRequestType, type CreateWorkerResultType } from '@svc/protocol';
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
  const port = ports[0]!;
  const env = { SVC_NATS_URL: nats.url, SVC_DATABASE_URL: postgres.url, SVC_STATE_DIR: stateDir, SVC_LOG_LEVEL: options.logLevel, ...options.env };
  const natsUser = (user: NatsServiceUser) => ({ SVC_NATS_USER: user, SVC_NATS_PASSWORD: nats.credentials[user].password });
  const quiet = { discardStdout: true, nodeArgs: options.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(options.profileDir)}`] : [] };
  const processes = [
    startServiceProcess('event-ingest', { ...env, ...natsUser('event-ingest') }, quiet),
    startServiceProcess(
      'session',
      {
        ...env,
        ...natsUser('session'),
        SVC_SANDBOXES_DIR: path.join(stateDir, 'sandboxes'),
        SVC_SANDBOX_CONTROL_PLANE_URL: `http://127.0.0.1:${port}`,
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
          SVC_OIDC_ISSUER: issuer.issuer,
          SVC_OIDC_AUDIENCE: 'svc',
          SVC_RATE_LIMIT_MAX: '1000000000',
          ...(options.localSignIn ? { SVC_LOCAL_ISSUER: 'true' } : {}),
          ...gatewayEnv,
        },
        quiet,
      ),
    ),
  ];
  const gatewayUrls = ports.map((p) => `http://127.0.0.1:${p}`);
  const gatewayUrl = gatewayUrls[0]!;
  let userToken = options.localSignIn ? '' : await issuer.sign({ sub: 'bench' });
  const stopInfrastructure = async () => {
    await Promise.all(processes.map((p) => p.stop()));
    await Promise.all([nats.stop(), postgres.stop(), issuer.stop()]);
    await rm(stateDir, { recursive: true, force: true });
  };
  await waitFor(
    'every service up',
    async () => {
      if (!userToken) {
        const local = await fetch(`${gatewayUrl}/v1/local/token`, { method: 'POST' }).catch(() => undefined);
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
    gateway: processes[3]!,
    processes,
    userToken,
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
export async function post(pipeline: Pipeline, worker: CreateWorkerResultType, body: unknown): Promise<void> {
  const answer = await call(`${pipeline.gatewayUrl}/v1/workers/${worker.worker_id}/sdk-events`, { method: 'POST', token: worker.token, body });
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
