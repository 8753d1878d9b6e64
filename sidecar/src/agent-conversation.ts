import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { SYSTEM_SUBTYPES } from '@svc/protocol';
import type { AgentEvent } from './adapters/adapter.js';

/**
 * The agent's own conversation id (Claude Code's `session_id`, Codex's `thread_id`, from its
 * `init` event), kept in the state directory: a run started again — after the idle timeout, a
 * crash of the agent or of the sidecar — resumes it (docs/conversations.md).
 */
export function agentConversation(stateDir: string) {
  const file = path.join(stateDir, 'agent-conversation');
  let id: string | undefined;
  try {
    const kept = readFileSync(file, 'utf8').trim();
    // The state directory is the sandbox's: what is read back is checked as what was learnt.
    if (CONVERSATION_ID.test(kept)) id = kept;
  } catch {
    // None yet: the agent has not started one.
  }
  return {
    id: (): string | undefined => id,
    /** Learns the id from the agent's `init` event (each resumed run says it again). */
    learnFrom(event: AgentEvent): void {
      const learnt = conversationIdOf(event);
      if (learnt === undefined || learnt === id) return;
      writeFileSync(`${file}.tmp`, learnt);
      renameSync(`${file}.tmp`, file);
      id = learnt;
    },
  };
}

/**
 * A conversation id as the agents make them (UUIDs): it goes on the agent's command line
 * (`--resume <id>`), so one that could be read as a flag, or anything else, is not taken.
 */
const CONVERSATION_ID = /^[0-9A-Za-z][0-9A-Za-z_-]{0,127}$/;

function conversationIdOf(event: AgentEvent): string | undefined {
  if (event.type !== 'system' || event.data.subtype !== SYSTEM_SUBTYPES.init) return undefined;
  const id = event.data.details?.['session_id'] ?? event.data.details?.['thread_id'];
  return typeof id === 'string' && CONVERSATION_ID.test(id) ? id : undefined;
}
