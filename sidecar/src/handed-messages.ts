import { appendFileSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { StoredEvent } from '@svc/protocol';

/**
 * The people's messages handed to the agent since it was last idle, kept in the state directory
 * (`handed-messages.jsonl`), each written before its bytes go to the agent. The decision cursor
 * is saved before a hand-over, so a sidecar killed in between would lose the message; started
 * again, it asks the agent's own record of its conversation which of these it took, and hands the
 * others over again (docs/conversations.md, "Exactly once").
 */
export function handedMessages(stateDir: string) {
  const file = path.join(stateDir, 'handed-messages.jsonl');
  return {
    record(message: StoredEvent): void {
      appendFileSync(file, `${JSON.stringify(message)}\n`);
    },
    /** The agent is idle: it has taken everything it was handed. */
    clear(): void {
      rmSync(file, { force: true });
    },
    /** What was handed over, once each, in order (a line a crash cut short is none). */
    read(): StoredEvent<'system'>[] {
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch {
        return [];
      }
      const seen = new Map<string, StoredEvent<'system'>>();
      for (const line of text.split('\n')) {
        try {
          const message = JSON.parse(line) as StoredEvent<'system'>;
          if (typeof message.id === 'string' && !seen.has(message.id)) seen.set(message.id, message);
        } catch {
          // Blank, or cut short.
        }
      }
      return [...seen.values()];
    },
  };
}

export type HandedMessages = ReturnType<typeof handedMessages>;
