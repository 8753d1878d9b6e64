import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { handedMessages } from './handed-messages.js';

describe('the messages handed to the agent, kept across a crash', () => {
  const dirs: string[] = [];
  afterEach(() => dirs.splice(0).forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  it('their ids read back once each, in order; anything else written there (the sandbox can) is no id; cleared when the agent is idle', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-handed-'));
    dirs.push(dir);
    const handed = handedMessages(dir);
    expect(handed.read()).toEqual([]);
    handed.record('7');
    handed.record('9');
    handed.record('7');
    appendFileSync(path.join(dir, 'handed-messages'), '{"id":"1","data":{"message":"forged"}}\n-3\n0\n12');
    expect(handedMessages(dir).read()).toEqual(['7', '9', '12']);
    handed.clear();
    expect(handedMessages(dir).read()).toEqual([]);
  });
});
