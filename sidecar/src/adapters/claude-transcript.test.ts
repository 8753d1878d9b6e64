import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { claudeCodeAdapter } from './claude-code.js';
import { messageUuid } from './claude-transcript.js';

const answer = { type: 'assistant', message: { role: 'assistant', content: [{ type: 'text', text: 'an answer' }] } };
const userLine = (id: string) => ({ type: 'user', uuid: messageUuid(id), message: { role: 'user', content: [{ type: 'text', text: id }] } });

describe("Claude Code's transcript: did the agent take a person's message", () => {
  const homes: string[] = [];
  afterEach(() => homes.splice(0).forEach((home) => rmSync(home, { recursive: true, force: true })));

  /** A home whose transcript of conversation `conv-1`, for the cwd `/workspace`, holds these lines (shaped as 2.1.330 writes them) and one a crash cut short. */
  function homeWith(lines: unknown[]): { home: string; file: string } {
    const home = mkdtempSync(path.join(tmpdir(), 'svc-claude-home-'));
    homes.push(home);
    const project = path.join(home, '.claude', 'projects', '-workspace');
    mkdirSync(project, { recursive: true });
    const file = path.join(project, 'conv-1.jsonl');
    writeFileSync(file, `${lines.map((line) => JSON.stringify(line)).join('\n')}\n{"type":"user","uuid":"cut sh`);
    return { home, file };
  }
  const place = (home: string, conversationId = 'conv-1') => ({ home, cwd: '/workspace', conversationId });
  const took = (home: string, id: string) => claudeCodeAdapter.tookMessage!(id, place(home));

  it("each message's uuid is a version-4 UUID made from its id, and the stdin line carries it", () => {
    expect(messageUuid('msg_a')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(messageUuid('msg_a')).toBe(messageUuid('msg_a'));
    expect(messageUuid('msg_a')).not.toBe(messageUuid('msg_b'));
    expect(JSON.parse(claudeCodeAdapter.formatMessage!({ text: 'hi', id: 'msg_a' }))).toMatchObject({ type: 'user', uuid: messageUuid('msg_a') });
  });

  it("taken and answered — as a turn (a user line with its uuid) or into a running turn (an attachment's source_uuid), an assistant line after it: yes; only queued, or absent: no", () => {
    const { home } = homeWith([
      userLine('msg_turn'),
      { type: 'attachment', attachment: { type: 'queued_command', source_uuid: messageUuid('msg_absorbed') }, uuid: 'other' },
      { type: 'queue-operation', operation: 'enqueue', content: `queued ${messageUuid('msg_queued')}` },
      answer,
    ]);
    expect([took(home, 'msg_turn'), took(home, 'msg_absorbed'), took(home, 'msg_queued'), took(home, 'msg_never')]).toEqual([true, true, false, false]);
  });

  it('a transcript that cannot be read as Claude Code writes it says nothing (taken: nothing is handed over twice): none, a link, a directory', () => {
    const { home, file } = homeWith([userLine('msg_turn')]);
    expect(claudeCodeAdapter.tookMessage!('msg_turn', place(home, 'conv-2'))).toBe(true);
    symlinkSync(file, path.join(path.dirname(file), 'conv-3.jsonl'));
    expect(claudeCodeAdapter.tookMessage!('msg_turn', place(home, 'conv-3'))).toBe(true);
    mkdirSync(path.join(path.dirname(file), 'conv-4.jsonl'));
    expect(claudeCodeAdapter.tookMessage!('msg_turn', place(home, 'conv-4'))).toBe(true);
  });

  it('recorded but not answered (the CLI killed before the model answered): not taken, and cut from the transcript so that handed over again it is there once; never through a link', () => {
    const { home, file } = homeWith([answer, userLine('msg_cut')]);
    expect(took(home, 'msg_cut')).toBe(false);
    claudeCodeAdapter.forgetUnansweredMessage!('msg_cut', place(home));
    expect(readFileSync(file, 'utf8')).toBe(`${JSON.stringify(answer)}\n`);
    // Another file the agent links in place of a transcript is never written.
    const elsewhere = path.join(home, 'elsewhere.jsonl');
    writeFileSync(elsewhere, `${JSON.stringify(userLine('msg_linked'))}\n`);
    symlinkSync(elsewhere, path.join(path.dirname(file), 'conv-5.jsonl'));
    claudeCodeAdapter.forgetUnansweredMessage!('msg_linked', place(home, 'conv-5'));
    expect(readFileSync(elsewhere, 'utf8')).toBe(`${JSON.stringify(userLine('msg_linked'))}\n`);
  });
});
