import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { StoredEvent } from '@svc/protocol';
import { pngOfSize, TINY_PNG_BASE64, waitFor } from '@svc/test-support';
import { startControlPlaneStandIn } from '../test/control-plane-stand-in.js';
import type { AgentEvent } from './adapters/adapter.js';
import { createControlChannelPoller } from './control-channel-poller.js';
import { createControlPlaneClient } from './http-client.js';
import { fetchMessageImages, imagesOf } from './message-images.js';

const png = { media_type: 'image/png' as const, bytes: Buffer.from(TINY_PNG_BASE64, 'base64') };

describe("a person's message images, fetched by the sidecar before the message goes on", () => {
  const cleanups: Array<() => unknown> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function setUp() {
    const stand = await startControlPlaneStandIn();
    const stateDir = mkdtempSync(path.join(tmpdir(), 'svc-images-'));
    const client = createControlPlaneClient(stand.url, 'svc_wt_test');
    const handed: StoredEvent[] = [];
    const recorded: AgentEvent[] = [];
    const warnings: string[] = [];
    const poller = createControlChannelPoller({
      client,
      workerId: 'wrk_1',
      stateDir,
      waitMs: 1000,
      pollIntervalMs: 10,
      warn: (message) => void warnings.push(message),
      prepare: (input) => fetchMessageImages(client, 'wrk_1', input, (event) => void recorded.push(event)),
      onInput: (input) => void handed.push(input),
    });
    cleanups.push(
      () => stand.close(),
      () => rmSync(stateDir, { recursive: true, force: true }),
      () => client.close(),
      () => poller.stop(),
    );
    return { stand, handed, recorded, warnings, poller };
  }

  it('a message is handed on with the very bytes it names, base64, in order with the decisions', async () => {
    const { stand, handed, recorded } = await setUp();
    stand.decide(1, 'r1');
    stand.say(2, 'what is this?', [png, { media_type: 'image/png', bytes: pngOfSize(300_000) }]);
    await waitFor('both handed on', () => handed.length === 2);
    expect(handed.map((input) => input.id)).toEqual(['1', '2']);
    expect(imagesOf(handed[1]!)).toEqual([
      { media_type: 'image/png', data: TINY_PNG_BASE64 },
      { media_type: 'image/png', data: pngOfSize(300_000).toString('base64') },
    ]);
    expect(imagesOf(handed[0]!)).toEqual([]);
    expect(recorded).toEqual([]);
  });

  it('the control plane away while an image is fetched: the message waits (the cursor stays before it), then goes on with its image, once', async () => {
    const { stand, handed, warnings, poller } = await setUp();
    stand.state.imagesDown = true;
    stand.decide(1, 'r1');
    stand.say(2, 'look', [png]);
    await waitFor('the decision handed on, the message waiting', () => handed.length === 1 && warnings.some((w) => w.includes('could not be fetched')));
    expect(poller.cursor()).toBe('1');
    stand.state.imagesDown = false;
    await waitFor('the message handed on', () => handed.length === 2);
    expect(imagesOf(handed[1]!)).toEqual([{ media_type: 'image/png', data: TINY_PNG_BASE64 }]);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(handed.map((input) => input.id)).toEqual(['1', '2']);
  });

  it('an image no longer kept, or not the bytes the message names: the message goes on without it, and the history says which and why', async () => {
    const { stand, handed, recorded } = await setUp();
    stand.say(1, 'gone', [png], false);
    stand.say(2, 'swapped', [{ media_type: 'image/png', bytes: pngOfSize(64) }]);
    // What the control plane serves under that name is not what the message names.
    const [sha256] = [...stand.images.keys()];
    stand.images.set(sha256!, png);
    await waitFor('both handed on', () => handed.length === 2);
    expect(handed.map((input) => imagesOf(input))).toEqual([[], []]);
    expect(recorded.map((event) => event.data)).toEqual([
      expect.objectContaining({
        level: 'warn',
        subtype: 'message_undelivered',
        details: expect.objectContaining({ message_id: 'msg_1' }),
        message: expect.stringContaining('image_not_found'),
      }),
      expect.objectContaining({
        level: 'warn',
        details: expect.objectContaining({ message_id: 'msg_2', image_sha256: sha256 }),
        message: expect.stringContaining('not the image the message names'),
      }),
    ]);
  });
});
