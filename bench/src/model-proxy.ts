/**
 * bench/model-proxy: what the model proxy adds to an agent's model traffic. A stand-in upstream
 * streams an SSE response; the same client asks it directly (the baseline, same run) and through
 * the sidecar's loopback proxy and the gateway (each its own process, as deployed):
 *   1. time to first byte, sequential requests alternating direct / proxied: p50 and p95, and
 *      what the proxy adds;
 *   2. 100 concurrent streams of 1 MiB each through the proxy: errors, wall time;
 *   3. CPU per streamed MiB of the gateway and of the sidecar (from /proc), beside the
 *      upstream stand-in's own (it writes every byte once).
 *
 *   npm run build && node bench/dist/model-proxy.js [--requests 300] [--streams 100] [--stream-kib 1024] [--profile-dir DIR]
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { percentile, startPipeline } from './pipeline.js';

const { values: args } = parseArgs({
  options: {
    requests: { type: 'string', default: '300' },
    streams: { type: 'string', default: '100' },
    'stream-kib': { type: 'string', default: '1024' },
    'profile-dir': { type: 'string' },
  },
});
const REQUESTS = Number(args.requests);
const STREAMS = Number(args.streams);
const STREAM_KIB = Number(args['stream-kib']);

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  // utime and stime are fields 14 and 15 of stat; here (after "pid (comm) ") at 11 and 12, in clock ticks (100 per second on Linux).
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** The stand-in upstream: a first SSE event at once, then `kib` KiB in 4 KiB events. */
function startUpstream(): Promise<{ url: string; server: http.Server }> {
  const chunk = `event: content_block_delta\ndata: ${JSON.stringify({ type: 'content_block_delta', delta: { type: 'text_delta', text: 'x'.repeat(4000) } })}\n\n`;
  const server = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      const kib = Number(new URL(request.url ?? '/', 'http://x').searchParams.get('kib') ?? '0');
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(
        `event: message_start\ndata: {"type":"message_start","message":{"id":"m","model":"claude-sonnet-4-5","usage":{"input_tokens":10,"output_tokens":1}}}\n\n`,
      );
      let sent = 0;
      const more = () => {
        while (sent < kib / 4) {
          sent++;
          if (!response.write(chunk)) return void response.once('drain', more);
        }
        response.end('event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":20}}\n\n');
      };
      more();
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server })));
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1000 });

/** One streamed request: ms to the first byte and to the end, and the bytes. */
function stream(url: string, headers: Record<string, string> = {}): Promise<{ firstByteMs: number; totalMs: number; bytes: number; status: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const request = http.request(
      url,
      { method: 'POST', agent, headers: { 'content-type': 'application/json', 'x-api-key': 'placeholder', ...headers } },
      (response) => {
        let firstByteMs = -1;
        let bytes = 0;
        response.on('data', (chunk: Buffer) => {
          if (firstByteMs < 0) firstByteMs = performance.now() - started;
          bytes += chunk.length;
        });
        response.on('end', () => resolve({ firstByteMs, totalMs: performance.now() - started, bytes, status: response.statusCode ?? 0 }));
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end('{"model":"claude-sonnet-4-5","stream":true,"max_tokens":10,"messages":[]}');
  });
}

async function main() {
  const upstream = await startUpstream();
  const pipeline = await startPipeline({
    logLevel: 'warn',
    profileDir: args['profile-dir'],
    gatewayEnv: { SVC_ANTHROPIC_API_KEY: 'sk-ant-bench', SVC_ANTHROPIC_UPSTREAM_URL: upstream.url },
  });
  const worker = await pipeline.createWorker({ model: { apis: ['anthropic'] } });
  const sidecar = spawn(
    process.execPath,
    [fileURLToPath(new URL('./model-proxy-sidecar.js', import.meta.url)), pipeline.gatewayUrl, worker.worker_id, worker.token],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  try {
    const proxyBase = await new Promise<string>((resolve, reject) => {
      sidecar.stdout.once('data', (line: Buffer) => resolve(line.toString().trim()));
      sidecar.once('exit', (code) => reject(new Error(`the sidecar's proxy exited with ${code}`)));
    });
    const direct = (kib: number) => `${upstream.url}/v1/messages?kib=${kib}`;
    const proxied = (kib: number) => `${proxyBase}/v1/messages?kib=${kib}`;
    // The gateway's hop alone: what the sidecar sends it.
    const viaGateway = (kib: number) =>
      stream(`${pipeline.gatewayUrl}/v1/workers/${worker.worker_id}/model/anthropic/v1/messages?kib=${kib}`, { authorization: `Bearer ${worker.token}` });

    // 1. Time to first byte, alternating, after a warm-up.
    for (let i = 0; i < 50; i++) await Promise.all([stream(direct(4)), stream(proxied(4)), viaGateway(4)]);
    const ttfb = { direct: [] as number[], gateway: [] as number[], proxied: [] as number[] };
    for (let i = 0; i < REQUESTS; i++) {
      ttfb.direct.push((await stream(direct(4))).firstByteMs);
      ttfb.gateway.push((await viaGateway(4)).firstByteMs);
      ttfb.proxied.push((await stream(proxied(4))).firstByteMs);
    }
    for (const list of Object.values(ttfb)) list.sort((a, b) => a - b);
    const p50 = { direct: percentile(ttfb.direct, 50), proxied: percentile(ttfb.proxied, 50) };
    console.log(`time to first byte, ${REQUESTS} sequential requests each (4 KiB responses):`);
    console.log(`  direct to the upstream (baseline): p50 ${p50.direct.toFixed(2)} ms, p95 ${percentile(ttfb.direct, 95).toFixed(2)} ms`);
    console.log(`  through the gateway alone:         p50 ${percentile(ttfb.gateway, 50).toFixed(2)} ms, p95 ${percentile(ttfb.gateway, 95).toFixed(2)} ms`);
    console.log(`  through sidecar and gateway:       p50 ${p50.proxied.toFixed(2)} ms, p95 ${percentile(ttfb.proxied, 95).toFixed(2)} ms`);
    console.log(`  added by the proxy:                p50 ${(p50.proxied - p50.direct).toFixed(2)} ms`);

    // 2 and 3. Concurrent streams, and the CPU they cost each hop.
    const pids = { gateway: pipeline.gateway.pid, sidecar: sidecar.pid! };
    const before = { gateway: cpuSeconds(pids.gateway), sidecar: cpuSeconds(pids.sidecar), upstream: process.cpuUsage() };
    const started = performance.now();
    const results = await Promise.allSettled(Array.from({ length: STREAMS }, () => stream(proxied(STREAM_KIB))));
    const wallMs = performance.now() - started;
    const ok = results.filter(
      (r): r is PromiseFulfilledResult<Awaited<ReturnType<typeof stream>>> =>
        r.status === 'fulfilled' && r.value.status === 200 && r.value.bytes >= STREAM_KIB * 1000,
    );
    const mib = ok.reduce((sum, r) => sum + r.value.bytes, 0) / (1024 * 1024);
    const cpu = { gateway: cpuSeconds(pids.gateway) - before.gateway, sidecar: cpuSeconds(pids.sidecar) - before.sidecar };
    console.log(
      `${STREAMS} concurrent streams of ${STREAM_KIB} KiB through the proxy: ${ok.length} complete, ${STREAMS - ok.length} errors, ${(wallMs / 1000).toFixed(2)} s, ${(mib / (wallMs / 1000)).toFixed(1)} MiB/s`,
    );
    console.log(`CPU per streamed MiB: gateway ${((cpu.gateway * 1000) / mib).toFixed(2)} ms, sidecar ${((cpu.sidecar * 1000) / mib).toFixed(2)} ms`);
    // The baseline: this process served the same bytes as the upstream (and read them as the client).
    const own = process.cpuUsage(before.upstream);
    console.log(
      `  same run, this process (upstream stand-in writing + client reading the same bytes): ${((own.user + own.system) / 1000 / mib).toFixed(2)} ms per MiB`,
    );
  } finally {
    sidecar.kill('SIGTERM');
    await pipeline.stop();
    upstream.server.close();
    agent.destroy();
  }
}

await main();
