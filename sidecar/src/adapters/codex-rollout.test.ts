import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientUserMessageId, rolloutHoldsMessage } from './codex-rollout.js';

const THREAD = '01a21edb-2e24-7402-8b10-627fb5620e21';
/** A user message's records as Codex 0.169.0 writes them to its rollout (shortened from a real one). */
const userMessage = (text: string, clientId?: string) => [
  { type: 'response_item', payload: { type: 'message', role: 'user', content: [{ type: 'input_text', text }] } },
  {
    type: 'event_msg',
    payload: {
      type: 'item_completed',
      thread_id: THREAD,
      turn_id: 'turn_2',
      item: {
        type: 'UserMessage',
        id: 'item_1',
        ...(clientId === undefined ? {} : { client_id: clientId }),
        content: [{ type: 'text', text, text_elements: [] }],
      },
    },
  },
];
const lines = (records: unknown[]) => records.map((record) => `${JSON.stringify(record)}\n`).join('');

describe("Codex's rollout: which of the people's messages Codex took", () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'svc-codex-rollout-'));
  });
  afterAll(() => rm(root, { recursive: true, force: true }));

  /** A CODEX_HOME whose thread's rollout holds `content` (under `sessions/2026/11/27`). */
  async function codexHome(name: string, content: string) {
    const home = path.join(root, name);
    const day = path.join(home, 'sessions', '2026', '11', '27');
    await mkdir(day, { recursive: true });
    await writeFile(path.join(day, `rollout-2026-11-27T21-13-30-${THREAD}.jsonl`), content);
    return { home: path.join(root, 'unused-home'), cwd: '/work', conversationId: THREAD, env: { CODEX_HOME: home } };
  }

  it('a message is taken when a user message of the rollout names it by its client id (alone or among a turn’s messages)', async () => {
    const place = await codexHome(
      'taken',
      lines([...userMessage('hello', 'msg_a'), ...userMessage('two at once', 'msg_b msg_c')]) + '{"type":"event_msg","payl',
    );
    expect(rolloutHoldsMessage(place, 'msg_a')).toBe(true);
    expect(rolloutHoldsMessage(place, 'msg_c')).toBe(true);
    // Not taken: named nowhere, named only in text, or a prefix of another's id.
    expect(rolloutHoldsMessage(place, 'msg_d')).toBe(false);
    const inText = await codexHome('in-text', lines(userMessage('msg_e is what I mean')));
    expect(rolloutHoldsMessage(inText, 'msg_e')).toBe(false);
    expect(rolloutHoldsMessage(place, 'msg')).toBe(false);
  });

  it('without CODEX_HOME the rollout is under ~/.codex; one that is not there, or not a regular file, says taken (nothing is handed over twice)', async () => {
    const home = path.join(root, 'home');
    const day = path.join(home, '.codex', 'sessions', '2026', '11', '27');
    await mkdir(day, { recursive: true });
    await writeFile(path.join(day, `rollout-2026-11-27T21-13-30-${THREAD}.jsonl`), lines(userMessage('hi', 'msg_x')));
    expect(rolloutHoldsMessage({ home, cwd: '/work', conversationId: THREAD }, 'msg_y')).toBe(false);
    expect(rolloutHoldsMessage({ home, cwd: '/work', conversationId: 'another-thread' }, 'msg_y')).toBe(true);
    const linked = path.join(root, 'linked', 'sessions', '2026', '11', '27');
    await mkdir(linked, { recursive: true });
    await symlink(path.join(day, `rollout-2026-11-27T21-13-30-${THREAD}.jsonl`), path.join(linked, `rollout-2026-11-27T21-13-30-${THREAD}.jsonl`));
    expect(rolloutHoldsMessage({ home, cwd: '/work', conversationId: THREAD, env: { CODEX_HOME: path.join(root, 'linked') } }, 'msg_y')).toBe(true);
  });

  it("a turn's client id names the people's messages in it (a prompt has none)", () => {
    expect(clientUserMessageId([{ id: 'msg_a' }])).toBe('msg_a');
    expect(clientUserMessageId([{}, { id: 'msg_a' }, { id: 'msg_b' }])).toBe('msg_a msg_b');
    expect(clientUserMessageId([{}])).toBeUndefined();
  });
});
