/** What the real CLIs send their model (read from their requests to a recording server, 2026-11), their keys aside. */

/** The headers Claude Code 2.1.330 sent to its model (read from its requests, 2026-11). */
export const CLAUDE_CODE_2_1_330_HEADERS: Record<string, string> = {
  accept: 'application/json',
  'content-type': 'application/json',
  'user-agent': 'claude-cli/2.1.330 (external, sdk-cli)',
  'x-claude-code-session-id': '2ea3edb3-0cd9-4fdf-8330-eae32c9b4428',
  'x-stainless-arch': 'x64',
  'x-stainless-lang': 'js',
  'x-stainless-os': 'Linux',
  'x-stainless-package-version': '0.128.0',
  'x-stainless-retry-count': '0',
  'x-stainless-runtime': 'node',
  'x-stainless-runtime-version': 'v26.12.1',
  'x-stainless-timeout': '600',
  'anthropic-beta':
    'claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,per-turn-control-2026-07-01,mid-conversation-tool-changes-2026-07-01,thinking-token-count-2026-05-13,advanced-tool-use-2025-11-20,effort-2025-11-24,thinking-display-updates-2026-08-18',
  'anthropic-dangerous-direct-browser-access': 'true',
  'anthropic-version': '2023-06-01',
  'x-app': 'cli',
};
/** Claude Code 2.1.197's betas (its other headers are 2.1.330's). */
export const CLAUDE_CODE_2_1_197_BETAS =
  'claude-code-20250219,context-1m-2025-08-07,interleaved-thinking-2025-05-14,thinking-token-count-2026-05-13,context-management-2025-06-27,prompt-caching-scope-2026-01-05,mid-conversation-system-2026-04-07,effort-2025-11-24';
/** The headers Codex 0.169.0 sent to its `svc` provider (its key aside). */
export const CODEX_0_169_0_HEADERS: Record<string, string> = {
  'x-codex-beta-features': 'remote_compaction_v2',
  'x-codex-window-id': '01a21979-d55e-78b2-9717-cea5d2cfb92e:0',
  'x-codex-turn-metadata': '{"session_id":"01a21979-d55e-78b2-9717-cea5d2cfb92e","request_kind":"turn"}',
  'x-client-request-id': '01a21979-d55e-78b2-9717-cea5d2cfb92e',
  'session-id': '01a21979-d55e-78b2-9717-cea5d2cfb92e',
  'thread-id': '01a21979-d55e-78b2-9717-cea5d2cfb92e',
  accept: 'text/event-stream',
  'content-type': 'application/json',
  originator: 'codex_exec',
  'user-agent': 'codex_exec/0.169.0 (Debian 12.0.0; x86_64) xterm (codex_exec; 0.169.0)',
};
