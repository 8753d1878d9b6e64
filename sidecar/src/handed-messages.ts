import { appendFileSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';

const EVENT_ID = /^[1-9][0-9]{0,19}$/;

/**
 * The ids of the people's messages handed to the agent since it was last idle, kept in the state
 * directory (`handed-messages`), each written before the control channel cursor moves past it. A
 * sidecar started again asks the agent's own record of its conversation which of these it took,
 * and hands the others over again (docs/conversations.md, "Exactly once"). The state directory
 * is the sandbox's: only ids are kept, and the messages themselves are read again from the
 * control plane, so nothing written there can make a message up.
 */
export function handedMessages(stateDir: string) {
  const file = path.join(stateDir, 'handed-messages');
  return {
    record(eventId: string): void {
      appendFileSync(file, `${eventId}\n`);
    },
    /** The agent is idle: it has taken everything it was handed. */
    clear(): void {
      rmSync(file, { force: true });
    },
    /** The ids handed over, once each, in order; anything else in the file is no id. */
    read(): string[] {
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch {
        return [];
      }
      return [...new Set(text.split('\n').filter((line) => EVENT_ID.test(line)))];
    },
  };
}

export type HandedMessages = ReturnType<typeof handedMessages>;
