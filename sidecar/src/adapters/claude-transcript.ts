import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
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
 * Whether Claude Code's transcript of the conversation (`$HOME/.claude/projects/<cwd>/<id>.jsonl`)
 * shows the message taken: as a turn's `user` line with its uuid, or taken into a running turn
 * (an attachment whose `source_uuid` is its uuid). Queued but not yet taken is not taken: a
 * resumed CLI would not run it.
 */
export function transcriptHoldsMessage(home: string, conversationId: string, messageId: string): boolean {
  const uuid = messageUuid(messageId);
  const projects = path.join(home, '.claude', 'projects');
  if (!existsSync(projects)) return false;
  for (const project of readdirSync(projects)) {
    const file = path.join(projects, project, `${conversationId}.jsonl`);
    if (!existsSync(file)) continue;
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (!line.includes(uuid)) continue;
      try {
        const entry = JSON.parse(line) as { type?: unknown; uuid?: unknown; attachment?: { source_uuid?: unknown } };
        if ((entry.type === 'user' && entry.uuid === uuid) || entry.attachment?.source_uuid === uuid) return true;
      } catch {
        // A line cut short by the crash: not a record of anything.
      }
    }
  }
  return false;
}
