/**
 * bench/hop-floor: what the machine charges for the hops alone. Figure 3 of bench/ingest (POST →
 * WebSocket viewer) crosses eight process boundaries that DESIGN.md's write path fixes: client →
 * gateway → nats-server → event-ingest → Postgres → event-ingest → nats-server → gateway → client.
 * Here a small message makes the same eight hops through seven relay processes that do nothing
 * but pass it on over loopback TCP (Node's `net`, Nagle off), sent at a steady rate as figure 3's
 * POSTs are; its round trip is the floor of figure 3 on this machine, before any work is done.
 * Beside it, what one hop costs a relay in CPU (woken, one read, one write): on a small VM the
 * wake-ups, not the work, are most of what the pipeline spends per event at moderate rates.
 *
 *   npm run build && node bench/dist/hop-floor.js [--rates 100,500,2000] [--seconds 5] [--hops 8]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { parseProcessStat, percentile, print, sleep } from './pipeline.js';

const { values: args } = parseArgs({
  options: {
    rates: { type: 'string', default: '100,500,2000' },
    seconds: { type: 'string', default: '5' },
    hops: { type: 'string', default: '8' },
    /** Internal: run as a relay that listens on an ephemeral port, prints it, and passes what it reads to `--next`. */
    relay: { type: 'boolean', default: false },
    next: { type: 'string' },
  },
});

/** A relay: accepts one connection, writes everything it reads to the next process. */
async function relay(nextPort: number): Promise<void> {
  const next = net.connect({ host: '127.0.0.1', port: nextPort, noDelay: true });
  await new Promise<void>((resolve, reject) => next.once('connect', resolve).once('error', reject));
  const server = net.createServer({ noDelay: true }, (socket) => socket.on('data', (chunk) => next.write(chunk)));
  server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as net.AddressInfo).port}\n`));
  // The parent ends the relay by closing its standard input (or killing it): either way it goes.
  process.stdin.resume().on('end', () => process.exit(0));
}

/** CPU seconds a process has used. */
async function cpuSecondsOf(pid: number): Promise<number> {
  return parseProcessStat(await readFile(`/proc/${pid}/stat`, 'utf8')).cpuSeconds;
}

/** Starts a relay passing to `nextPort`; resolves with its own port. */
function startRelay(nextPort: number, children: ChildProcess[]): Promise<number> {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--relay', '--next', String(nextPort)], { stdio: ['pipe', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    child.stdout!.once('data', (chunk: Buffer) => resolve(Number(String(chunk).trim())));
    child.once('exit', (code) => reject(new Error(`a relay exited (${code}) before listening`)));
  });
}

async function main(): Promise<void> {
  const hops = Number(args.hops);
  const seconds = Number(args.seconds);
  const children: ChildProcess[] = [];
  // The last hop comes back here.
  const sentAt = new Map<number, number>();
  let times: number[] = [];
  let pending = '';
  const home = net.createServer({ noDelay: true }, (socket) =>
    socket.on('data', (chunk) => {
      const now = performance.now();
      pending += String(chunk);
      const lines = pending.split('\n');
      pending = lines.pop()!;
      for (const line of lines) times.push(now - sentAt.get(Number(line))!);
    }),
  );
  await new Promise<void>((resolve) => home.listen(0, '127.0.0.1', resolve));
  try {
    let nextPort = (home.address() as net.AddressInfo).port;
    for (let n = 1; n < hops; n++) nextPort = await startRelay(nextPort, children);
    const first = net.connect({ host: '127.0.0.1', port: nextPort, noDelay: true });
    await new Promise<void>((resolve, reject) => first.once('connect', resolve).once('error', reject));
    print(`hop-floor: a message through ${hops} loopback hops (${hops - 1} relay processes), ${seconds}s per rate`);
    const rows = [];
    let id = 0;
    for (const rate of args.rates.split(',').map(Number)) {
      times = [];
      const relaysBefore = await Promise.all(children.map((child) => cpuSecondsOf(child.pid!)));
      // Sent as bench/ingest's figure 3 sends its POSTs: whatever is due, every 2 ms.
      const started = performance.now();
      let sent = 0;
      while (performance.now() - started < seconds * 1000) {
        const due = Math.floor(((performance.now() - started) / 1000) * rate);
        for (; sent < due; sent++, id++) {
          sentAt.set(id, performance.now());
          first.write(`${id}\n`);
        }
        await sleep(2);
      }
      await sleep(200);
      const relaysAfter = await Promise.all(children.map((child) => cpuSecondsOf(child.pid!)));
      const relaySeconds = relaysAfter.reduce((sum, used, n) => sum + used - relaysBefore[n]!, 0);
      const sorted = times.sort((a, b) => a - b);
      rows.push({
        'messages/s': rate,
        messages: sorted.length,
        'p50 ms': percentile(sorted, 50).toFixed(2),
        'p99 ms': percentile(sorted, 99).toFixed(2),
        'relay CPU µs per hop': Math.round((relaySeconds / children.length / sorted.length) * 1e6),
      });
    }
    console.table(rows);
    first.destroy();
  } finally {
    for (const child of children) child.kill();
    home.close();
  }
}

if (args.relay) await relay(Number(args.next));
else await main();
