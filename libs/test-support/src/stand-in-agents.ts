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
 *   turn, sends a line, and prints `{"target", "status", "echo" | "reason"}`;
 * - `acp-agent`: a scripted Agent Client Protocol agent (asks before `write <name>`, runs
 *   `slowly` until cancelled, keeps its sessions in `ACP_STATE_DIR` for `session/load`).
 */
export function standInAgent(name: 'replay-claude' | 'replay-codex-app-server' | 'ask-repeatedly' | 'stream-timer' | 'egress-client' | 'acp-agent'): string {
  // libs/test-support/{src,dist}/ → libs/test-support/agents/
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../agents', `${name}.mjs`);
}

/** How a test's template runs the demo agent (`svc-sidecar demo-agent`: it asks to write hello.txt, and once allowed asks the same again). */
export interface DemoTemplateOptions {
  description?: string;
  mode?: 'conversation' | 'one_shot';
  /** Milliseconds between its steps (`SVC_DEMO_STEP_MS`). */
  stepMs?: number;
  /** Its Write asked of a person (else allowed by its lists, as its Glob always is). */
  writeAsked?: boolean;
  /** More `[session]` settings (`idle_timeout_s = 5`…). */
  session?: Readonly<Record<string, number>>;
  /** TOML appended after its tables (`[[approvals.route]]`, `[workspace]`…). */
  tables?: string;
}

/** A template (TOML) running the demo agent under a real sidecar, as the tests' stacks write into their templates directory. */
export function demoAgentTemplate(options: DemoTemplateOptions = {}): string {
  const session = Object.entries(options.session ?? {}).map(([key, value]) => `${key} = ${value}\n`);
  return `${options.description === undefined ? '' : `description = "${options.description}"\n`}[agent]
command = "/usr/local/bin/svc-sidecar"
args = ["demo-agent"]
cwd = "/workspace"
prompt = "Show me what you can do."
env = { SVC_DEMO_STEP_MS = "${options.stepMs ?? 20}" }
[session]
mode = "${options.mode ?? 'conversation'}"
${session.join('')}[sidecar]
adapter = "claude-code"
${options.writeAsked ? 'auto_approve = ["Glob"]\nask = ["Write"]' : 'auto_approve = ["Glob", "Write"]'}
${options.tables ?? ''}`;
}
