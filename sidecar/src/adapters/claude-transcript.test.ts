import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { claudeCodeAdapter } from './claude-code.js';
import { messageUuid, transcriptHoldsMessage } from './claude-transcript.js';

describe("Claude Code's transcript: did the agent take a person's message", () => {
  const homes: string[] = [];
  afterEach(() => homes.splice(0).forEach((home) => rmSync(home, { recursive: true, force: true })));

  /** A home whose transcript of conversation `conv-1` holds these lines (shaped as 2.1.330 writes them). */
  function homeWith(lines: unknown[]): string {
    const home = mkdtempSync(path.join(tmpdir(), 'svc-claude-home-'));
    homes.push(home);
    const project = path.join(home, '.claude', 'projects', '-workspace');
    mkdirSync(project, { recursive: true });
    writeFileSync(path.join(project, 'conv-1.jsonl'), `${lines.map((line) => JSON.stringify(line)).join('\n')}\n{"type":"user","uuid":"cut sh`);
    return home;
  }

  it("each message's uuid is a version-4 UUID made from its id, and the stdin line carries it", () => {
    expect(messageUuid('msg_a')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(messageUuid('msg_a')).toBe(messageUuid('msg_a'));
    expect(messageUuid('msg_a')).not.toBe(messageUuid('msg_b'));
    expect(JSON.parse(claudeCodeAdapter.formatMessage!({ text: 'hi', id: 'msg_a' }))).toMatchObject({ type: 'user', uuid: messageUuid('msg_a') });
  });

  it("taken and answered — as a turn (a user line with its uuid) or into a running turn (an attachment's source_uuid), an assistant line after it: yes; only queued, or absent: no", () => {
    const home = homeWith([
      { type: 'user', uuid: messageUuid('msg_turn'), message: { role: 'user', content: [{ type: 'text', text: 'a turn' }] } },
      { type: 'attachment', attachment: { type: 'queued_command', source_uuid: messageUuid('msg_absorbed') }, uuid: 'other' },
      { type: 'queue-operation', operation: 'enqueue', content: `queued ${messageUuid('msg_queued')}` },
      { type: 'assistant', message: { role: 'assistant', content: [{ type: 'text', text: 'an answer' }] } },
    ]);
    const took = (id: string) => claudeCodeAdapter.tookMessage!(id, { conversationId: 'conv-1', home });
    expect([took('msg_turn'), took('msg_absorbed'), took('msg_queued'), took('msg_never')]).toEqual([true, true, false, false]);
    expect(transcriptHoldsMessage(home, 'conv-2', 'msg_turn')).toBe(false);
    expect(transcriptHoldsMessage(path.join(home, 'nowhere'), 'conv-1', 'msg_turn')).toBe(false);
  });

  it('recorded but not answered (the CLI killed before the model answered): not taken, and cut from the transcript so that handed over again it is there once', () => {
    const answered = { type: 'assistant', message: { role: 'assistant', content: [{ type: 'text', text: 'turn 1 answered' }] } };
    const home = homeWith([answered, { type: 'user', uuid: messageUuid('msg_cut'), message: { role: 'user', content: [{ type: 'text', text: 'cut' }] } }]);
    expect(claudeCodeAdapter.tookMessage!('msg_cut', { conversationId: 'conv-1', home })).toBe(false);
    const kept = readFileSync(path.join(home, '.claude', 'projects', '-workspace', 'conv-1.jsonl'), 'utf8');
    expect(kept).toBe(`${JSON.stringify(answered)}\n`);
  });
});
