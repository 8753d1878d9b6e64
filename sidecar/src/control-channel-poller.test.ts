import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { StoredEvent } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { startControlPlaneStandIn } from '../test/control-plane-stand-in.js';
import { createControlChannelPoller } from './control-channel-poller.js';
import { createControlPlaneClient } from './http-client.js';

describe('the control channel poller', () => {
  const cleanups: Array<() => unknown> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function setUp() {
    const stand = await startControlPlaneStandIn();
    const stateDir = mkdtempSync(path.join(tmpdir(), 'svc-poller-'));
    cleanups.push(
      () => stand.close(),
      () => rmSync(stateDir, { recursive: true, force: true }),
    );
    const start = (handed: string[], warnings: string[] = []) => {
      const client = createControlPlaneClient(stand.url, 'svc_wt_test');
      const poller = createControlChannelPoller({
        client,
        workerId: 'wrk_1',
        stateDir,
        waitMs: 1000,
        pollIntervalMs: 10,
        warn: (message) => void warnings.push(message),
        // The cursor on disk has moved past an input before it is handed on.
        onInput: (input: StoredEvent) => void handed.push(`${input.id}@${readFileSync(path.join(stateDir, 'control-cursor'), 'utf8')}`),
      });
      cleanups.push(() => client.close());
      return poller;
    };
    return { stand, start };
  }

  it('hands on each decision once, in id order, after saving the cursor; a restarted poller resumes after it', async () => {
    const { stand, start } = await setUp();
    const handed: string[] = [];
    const first = start(handed);
    stand.decide(3, 'r1');
    stand.decide(7, 'r2');
    await waitFor('two decisions', () => handed.length === 2);
    await first.stop();
    expect(handed).toEqual(['3@3', '7@7']);

    stand.decide(9, 'r3');
    const again: string[] = [];
    const second = start(again);
    await waitFor('the new decision', () => again.length === 1);
    await second.stop();
    expect(again).toEqual(['9@9']);
    expect(stand.polls).toContain('7');
  });

  it('a control plane answering 503 is polled again (said once), and nothing is lost', async () => {
    const { stand, start } = await setUp();
    stand.state.down = true;
    const handed: string[] = [];
    const warnings: string[] = [];
    const poller = start(handed, warnings);
    await waitFor('a failed poll', () => warnings.length > 0);
    stand.decide(1, 'r1');
    stand.state.down = false;
    await waitFor('the decision', () => handed.length === 1);
    await poller.stop();
    expect(warnings).toEqual([expect.stringMatching(/^control channel poll failed \(.*503.*\); trying again$/)]);
  });
});
