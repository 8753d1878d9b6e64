import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { personMessageData, type StoredEvent } from '@svc/protocol';
import { handedMessages } from './handed-messages.js';

const message = (id: string, text: string): StoredEvent<'system'> => ({
  id,
  worker_id: 'wrk_1',
  type: 'system',
  uid: `message:msg_${id}`,
  ts: '2026-11-27T00:00:00.000Z',
  data: personMessageData(text, `msg_${id}`),
  source: 'user:api:alice',
});

describe('the messages handed to the agent, kept across a crash', () => {
  const dirs: string[] = [];
  afterEach(() => dirs.splice(0).forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  it('read back once each, in order, past a line a crash cut short; cleared when the agent is idle', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-handed-'));
    dirs.push(dir);
    const handed = handedMessages(dir);
    expect(handed.read()).toEqual([]);
    handed.record(message('7', 'first'));
    handed.record(message('9', 'second'));
    handed.record(message('7', 'first'));
    appendFileSync(path.join(dir, 'handed-messages.jsonl'), '{"id":"1');
    expect(
      handedMessages(dir)
        .read()
        .map((m) => m.data.message),
    ).toEqual(['first', 'second']);
    handed.clear();
    expect(handedMessages(dir).read()).toEqual([]);
  });
});
