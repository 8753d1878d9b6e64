import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '@svc/test-support';
import { startControlPlaneStandIn } from '../test/control-plane-stand-in.js';
import { createControlPlaneClient } from './http-client.js';
import { createOutbox } from './outbox.js';

const note = (n: number) => ({ type: 'system' as const, data: { level: 'info' as const, message: `#${n}` } });

describe('the outbox', () => {
  const cleanups: Array<() => unknown> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function setUp() {
    const stand = await startControlPlaneStandIn();
    const stateDir = mkdtempSync(path.join(tmpdir(), 'svc-outbox-'));
    cleanups.push(
      () => stand.close(),
      () => rmSync(stateDir, { recursive: true, force: true }),
    );
    const open = (bootId: string, options: { memoryLimit?: number } = {}) => {
      const client = createControlPlaneClient(stand.url, 'svc_wt_test');
      cleanups.push(() => client.close());
      return createOutbox({ client, workerId: 'wrk_1', bootId, stateDir, bufferMaxBytes: 1024 * 1024, warn: () => {}, ...options });
    };
    return { stand, stateDir, open };
  }

  it('delivers every event once, in order, with uids <boot>:<n>', async () => {
    const { stand, open } = await setUp();
    const outbox = open('boot1');
    for (let n = 0; n < 250; n++) outbox.push(note(n));
    expect(await outbox.close()).toBe(true);
    expect(stand.received.map((event) => event.uid)).toEqual(Array.from({ length: 250 }, (_, n) => `boot1:${n}`));
  });

  it('while the control plane is away, events beyond memory wait on disk; all arrive in order once it is back', async () => {
    const { stand, stateDir, open } = await setUp();
    stand.state.down = true;
    const outbox = open('boot1', { memoryLimit: 10 });
    for (let n = 0; n < 50; n++) outbox.push(note(n));
    expect(statSync(path.join(stateDir, 'outbox.jsonl')).size).toBeGreaterThan(0);
    stand.state.down = false;
    await waitFor('all 50', () => stand.received.length === 50);
    expect(await outbox.close()).toBe(true);
    expect(stand.received.map((event) => (event.data as { message: string }).message)).toEqual(Array.from({ length: 50 }, (_, n) => `#${n}`));
  });

  it('closed with a deadline while the control plane is away: what is unsent stays on disk, and the next start sends it first', async () => {
    const { stand, stateDir, open } = await setUp();
    stand.state.down = true;
    const first = open('boot1');
    for (let n = 0; n < 5; n++) first.push(note(n));
    expect(await first.close(200)).toBe(false);
    expect(existsSync(path.join(stateDir, 'outbox.jsonl'))).toBe(true);
    stand.state.down = false;
    const second = open('boot2');
    second.push(note(5));
    expect(await second.close()).toBe(true);
    expect(stand.received.map((event) => event.uid)).toEqual(['boot1:0', 'boot1:1', 'boot1:2', 'boot1:3', 'boot1:4', 'boot2:0']);
  });
});
