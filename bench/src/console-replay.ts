/// <reference lib="dom" />
/**
 * bench/console-replay: the web console's worker page over a worker with 100,000 stored events,
 * in a real Chromium (Debian's, headless), on the stack as deployed (every service its own
 * process, Postgres with fsync on, the gateway serving console/dist). Figures:
 *  1. first screen: from opening the worker page (a click in the signed-in console) until its
 *     newest event is drawn; also cold: from loading the page, signing in, to the same;
 *  2. the page's JS heap (after a garbage collection) on the first screen, and after scrolling
 *     to the very top (every event read back, page by page);
 *  3. how long scrolling to the top takes.
 * Baselines in the same run and browser: the page's own `fetch` of the newest page with the same
 * token (the network and JSON floor of a first screen), and a blank page that fetches the whole
 * history and keeps the parsed events (the floor of holding 100,000 events in a browser).
 *
 *   npm run build && node bench/dist/console-replay.js [--events 100000] [--rounds 5] [--check]
 *
 * `--check` (CI): exit 1 when a target of issue 22 is not met (first screen ≤ 1 s, heap ≤ 150 MB).
 */
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { CDPSession, Page } from 'playwright-core';
import { launchBrowser } from '@svc/test-support/browser';
import { workerWithHistory } from './history.js';
import { percentile, print, startPipeline, verdict } from './pipeline.js';

const { values: args } = parseArgs({
  options: {
    events: { type: 'string', default: '100000' },
    rounds: { type: 'string', default: '5' },
    check: { type: 'boolean', default: false },
    'log-level': { type: 'string', default: 'warn' },
  },
});
const EVENTS = Number(args.events);
const ROUNDS = Number(args.rounds);
const CONSOLE_DIR = fileURLToPath(new URL('../../console/dist/', import.meta.url));

async function heapMiB(cdp: CDPSession): Promise<number> {
  await cdp.send('HeapProfiler.collectGarbage');
  const { usedSize } = await cdp.send('Runtime.getHeapUsage');
  return usedSize / 2 ** 20;
}

/** Moves within the console as its links do (no reload: the token stays in the page's memory). */
async function openInConsole(page: Page, path: string): Promise<void> {
  await page.evaluate((to) => {
    window.history.pushState(null, '', to);
    window.dispatchEvent(new PopStateEvent('popstate'));
  }, path);
}

const pipeline = await startPipeline({ logLevel: args['log-level'], localSignIn: true, gatewayEnv: { SVC_CONSOLE_DIR: CONSOLE_DIR } });
const browser = await launchBrowser();
try {
  const worker = await workerWithHistory(pipeline, EVENTS);
  const workerPath = `/workers/${worker.worker_id}`;
  const newest = `[data-event-id="${EVENTS}"]`;

  // Cold: load the page, sign in, until the newest event is drawn.
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const cdp = await page.context().newCDPSession(page);
  const coldStart = performance.now();
  await page.goto(`${pipeline.gatewayUrl}${workerPath}#code=${pipeline.signInCode}`);
  await page.getByRole('button', { name: 'Sign in as the local user' }).click();
  await page.locator(newest).waitFor({ timeout: 30_000 });
  const cold = performance.now() - coldStart;

  // Warm: from the sessions page, open the worker (a new view each time), until the newest event is drawn.
  const firstScreens: number[] = [];
  for (let round = 0; round < ROUNDS + 1; round++) {
    await openInConsole(page, '/sessions');
    await page.getByRole('heading', { name: 'Sessions' }).waitFor();
    const opened = performance.now();
    await openInConsole(page, workerPath);
    await page.locator(newest).waitFor({ timeout: 30_000 });
    if (round > 0) firstScreens.push(performance.now() - opened);
  }
  const heapFirstScreen = await heapMiB(cdp);

  // Scroll to the very top: every earlier page is read in.
  const list = page.getByRole('log', { name: 'Events' });
  const scrollStart = performance.now();
  while ((await page.getByText(/events, from the first$/).count()) === 0) {
    await list.evaluate((element) => (element.scrollTop = 0));
    await page.waitForTimeout(20);
    if (performance.now() - scrollStart > 300_000) throw new Error('scrolling to the top took over 5 minutes');
  }
  await list.evaluate((element) => (element.scrollTop = 0));
  await page.locator('[data-event-id="1"]').waitFor();
  const scrolled = performance.now() - scrollStart;
  const heapAtTop = await heapMiB(cdp);
  const rowsInPage = await page.locator('div.events li').count();

  // Baselines: the page's own fetch of the newest page; a blank page holding the whole history as parsed JSON.
  const fetchTimes: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    fetchTimes.push(
      await page.evaluate(
        async ([path, token]) => {
          const t0 = performance.now();
          const response = await fetch(path!, { headers: { authorization: `Bearer ${token}` } });
          await response.json();
          return performance.now() - t0;
        },
        [`/v1/workers/${worker.worker_id}/sdk-events?before_id=end&limit=200`, pipeline.userToken],
      ),
    );
  }
  const blank = await browser.newPage();
  await blank.goto(`${pipeline.gatewayUrl}/no-such-page`);
  const blankCdp = await blank.context().newCDPSession(blank);
  await blank.evaluate(
    async ([workerId, token]) => {
      const held: unknown[] = [];
      (window as unknown as { held: unknown[] }).held = held;
      for (let after = '0'; ;) {
        const page = (await (
          await fetch(`/v1/workers/${workerId}/sdk-events?after_id=${after}&limit=1000`, { headers: { authorization: `Bearer ${token}` } })
        ).json()) as { items: Array<{ id: string }> };
        if (page.items.length === 0) break;
        held.push(...page.items);
        after = page.items.at(-1)!.id;
      }
    },
    [worker.worker_id, pipeline.userToken],
  );
  const heapBaseline = await heapMiB(blankCdp);
  const heldCount = await blank.evaluate(() => (window as unknown as { held: unknown[] }).held.length);
  if (heldCount !== EVENTS) throw new Error(`the baseline page holds ${heldCount} events, not ${EVENTS}`);

  print(`console-replay: the worker page over ${EVENTS.toLocaleString('en-US')} stored events, Chromium headless 1280×800, ${ROUNDS} openings`);
  process.stdout.write(
    `first screen (open the worker page → newest event drawn): p50 ${percentile(firstScreens, 50).toFixed(0)} ms, max ${Math.max(...firstScreens).toFixed(0)} ms\n`,
  );
  process.stdout.write(`  baseline: the page's fetch of the newest 200 events: p50 ${percentile(fetchTimes, 50).toFixed(0)} ms\n`);
  process.stdout.write(`cold (load the page, sign in, newest event drawn): ${cold.toFixed(0)} ms\n`);
  process.stdout.write(
    `scroll to the top (${EVENTS.toLocaleString('en-US')} events read back): ${(scrolled / 1000).toFixed(1)} s; rows in the page at the top: ${rowsInPage}\n`,
  );
  process.stdout.write(`JS heap: first screen ${heapFirstScreen.toFixed(1)} MiB, at the top ${heapAtTop.toFixed(1)} MiB\n`);
  process.stdout.write(`  baseline: a blank page holding the ${EVENTS.toLocaleString('en-US')} parsed events: ${heapBaseline.toFixed(1)} MiB\n`);
  const met = [
    verdict('first screen p50 (ms)', percentile(firstScreens, 50), '≤', 1000),
    verdict('JS heap at the top (MB)', (heapAtTop * 2 ** 20) / 1e6, '≤', 150),
  ];
  if (args.check && met.includes(false)) process.exitCode = 1;
} finally {
  await browser.close();
  await pipeline.stop();
}
