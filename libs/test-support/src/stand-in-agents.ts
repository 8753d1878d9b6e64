import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Stand-ins for agent CLIs, for tests and benchmarks of the sidecar that need no model: each is
 * an executable script in libs/test-support/agents that speaks the real CLI's protocol.
 * - `replay-claude`: replays the real Claude Code transcript named by `TRANSCRIPT`, waits for each
 *   permission answer on stdin and appends it to `DECISION_FILE`;
 * - `replay-codex-app-server`: replays a real `codex app-server` transcript (`TRANSCRIPT`), waiting
 *   for each client message it has; appends the answers to Codex's requests to `DECISION_FILE`;
 * - `ask-repeatedly`: asks for permission `ASKS` times with fresh request ids and appends
 *   `<request_id> <ms>` to `RECEIPTS` as each answer arrives;
 * - `stream-timer`: asks its model API (`ANTHROPIC_BASE_URL`) for a streamed response and prints
 *   `{"event": n, "at": <epoch ms>}` as each SSE event arrives;
 * - `egress-client`: opens a CONNECT tunnel through `HTTPS_PROXY` to each of `EGRESS_TARGETS` in
 *   turn, sends a line, and prints `{"target", "status", "echo" | "reason"}`.
 */
export function standInAgent(name: 'replay-claude' | 'replay-codex-app-server' | 'ask-repeatedly' | 'stream-timer' | 'egress-client'): string {
  // libs/test-support/{src,dist}/ → libs/test-support/agents/
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../agents', `${name}.mjs`);
}
