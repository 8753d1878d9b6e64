import { createHash } from 'node:crypto';
import { renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ConversationPlace } from './adapter.js';
import { agentRecordLines } from './agent-record.js';

/**
 * The uuid a person's message carries on Claude Code's stdin (a stream-json `user` line's
 * `uuid`), made from its `message_id`: the CLI keeps it in its transcript, which is how a sidecar
 * started again tells whether the agent took the message before the crash.
 */
export function messageUuid(messageId: string): string {
  const hex = createHash('sha256').update(messageId).digest('hex');
  // Shaped as a version-4 UUID (the CLI's own are).
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** Where Claude Code keeps a conversation's transcript: its projects directory names the cwd with every other character than a letter or digit made `-`. */
type TranscriptPlace = ConversationPlace;

/** The transcript's lines, or undefined when it cannot be read as Claude Code writes it (`agentRecordLines`). */
function transcriptLines(place: TranscriptPlace): { file: string; lines: string[] } | undefined {
  const project = path.join(place.home, '.claude', 'projects', place.cwd.replace(/[^A-Za-z0-9]/g, '-'));
  const file = path.join(project, `${place.conversationId}.jsonl`);
  const lines = agentRecordLines(project, file);
  return lines && { file, lines };
}

/** The index of the line recording the message taken — its `user` line, or the attachment of a message taken into a running turn — or -1. */
function recordOf(lines: readonly string[], uuid: string): number {
  return lines.findIndex((line) => {
    if (!line.includes(uuid)) return false;
    try {
      const entry = JSON.parse(line) as { type?: unknown; uuid?: unknown; attachment?: { source_uuid?: unknown } };
      return (entry.type === 'user' && entry.uuid === uuid) || entry.attachment?.source_uuid === uuid;
    } catch {
      // A line cut short by the crash: not a record of anything.
      return false;
    }
  });
}

const isAnswer = (line: string) => {
  try {
    return (JSON.parse(line) as { type?: unknown }).type === 'assistant';
  } catch {
    return false;
  }
};

/**
 * Whether Claude Code took the message: recorded (as a turn's `user` line with its uuid, or an
 * attachment whose `source_uuid` is its uuid) and answered (an `assistant` line after it). A
 * transcript that cannot be read says nothing: taken, so nothing is handed over twice.
 */
export function transcriptHoldsMessage(place: TranscriptPlace, messageId: string): boolean {
  const transcript = transcriptLines(place);
  if (!transcript) return true;
  const at = recordOf(transcript.lines, messageUuid(messageId));
  return at >= 0 && transcript.lines.slice(at + 1).some(isAnswer);
}

/**
 * Cuts a message recorded but never answered (the CLI killed between the two: the model may
 * never have seen it) from the transcript's end, so that handed over again the resumed CLI holds
 * it once. Written aside and renamed: a crash meanwhile leaves the transcript as it was.
 */
export function forgetUnansweredMessage(place: TranscriptPlace, messageId: string): void {
  const transcript = transcriptLines(place);
  if (!transcript) return;
  const at = recordOf(transcript.lines, messageUuid(messageId));
  if (at < 0 || transcript.lines.slice(at + 1).some(isAnswer)) return;
  writeFileSync(
    `${transcript.file}.svc-tmp`,
    transcript.lines
      .slice(0, at)
      .map((line) => `${line}\n`)
      .join(''),
  );
  renameSync(`${transcript.file}.svc-tmp`, transcript.file);
}
