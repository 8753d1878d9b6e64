import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

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

/**
 * Whether Claude Code took the message (`$HOME/.claude/projects/<cwd>/<id>.jsonl`, its
 * transcript): taken as a turn's `user` line with its uuid, or into a running turn (an
 * attachment whose `source_uuid` is its uuid), and answered (an `assistant` line after it). One
 * recorded but not answered (the CLI killed between the two: the model may never have seen it)
 * is cut from the transcript's end, so that handed over again the resumed CLI holds it once.
 * Queued but not yet taken is not taken: a resumed CLI would not run it.
 */
export function transcriptHoldsMessage(home: string, conversationId: string, messageId: string): boolean {
  const file = transcriptOf(home, conversationId);
  if (file === undefined) return false;
  const uuid = messageUuid(messageId);
  const lines = readFileSync(file, 'utf8').split('\n');
  const at = lines.findIndex((line) => line.includes(uuid) && recordsMessage(line, uuid));
  if (at < 0) return false;
  if (lines.slice(at + 1).some((line) => typeOf(line) === 'assistant')) return true;
  writeFileSync(
    file,
    lines
      .slice(0, at)
      .map((line) => `${line}\n`)
      .join(''),
  );
  return false;
}

function transcriptOf(home: string, conversationId: string): string | undefined {
  const projects = path.join(home, '.claude', 'projects');
  if (!existsSync(projects)) return undefined;
  for (const project of readdirSync(projects)) {
    const file = path.join(projects, project, `${conversationId}.jsonl`);
    if (existsSync(file)) return file;
  }
  return undefined;
}

/** A transcript line that records the message taken: its `user` line, or the attachment of a message taken into a running turn. */
function recordsMessage(line: string, uuid: string): boolean {
  try {
    const entry = JSON.parse(line) as { type?: unknown; uuid?: unknown; attachment?: { source_uuid?: unknown } };
    return (entry.type === 'user' && entry.uuid === uuid) || entry.attachment?.source_uuid === uuid;
  } catch {
    // A line cut short by the crash: not a record of anything.
    return false;
  }
}

function typeOf(line: string): unknown {
  try {
    return (JSON.parse(line) as { type?: unknown }).type;
  } catch {
    return undefined;
  }
}
