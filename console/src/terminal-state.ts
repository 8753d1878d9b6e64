import { STREAM_CLOSE, TERMINAL_CLOSE, TERMINAL_CONNECT_TIMEOUT_MS, TerminalQuery } from '@svc/protocol';
import { ApiError, reasonOf } from './api.js';

/** A terminal's size in character cells, as the sandbox's shell is told it. */
export interface TerminalSize {
  cols: number;
  rows: number;
}

/** A Terminal tab's terminal: not opened yet, connecting, connected (at its size), or closed and why. */
export type TerminalState = { kind: 'idle' } | { kind: 'connecting' } | { kind: 'connected'; size: TerminalSize } | { kind: 'closed'; why: string };

/** The size asked for when the terminal opens: what fits its box, within what the gateway takes; 80×24 when nothing fits (a box not laid out). */
export function terminalSize(fitting: { cols: number; rows: number } | undefined): TerminalSize {
  // The query's schema holds the bounds (its JSON Schema keywords; TypeBox does not type them).
  const { cols, rows } = TerminalQuery.properties as unknown as Record<keyof TerminalSize, { minimum: number; maximum: number; default: number }>;
  const within = (value: number | undefined, bounds: { minimum: number; maximum: number; default: number }) =>
    value === undefined || !Number.isFinite(value) ? bounds.default : Math.min(bounds.maximum, Math.max(bounds.minimum, Math.floor(value)));
  return { cols: within(fitting?.cols, cols), rows: within(fitting?.rows, rows) };
}

/** What the status line says. */
export function terminalStatusText(state: TerminalState): string {
  switch (state.kind) {
    case 'idle':
      return 'not open';
    case 'connecting':
      return 'connecting…';
    case 'connected':
      return `connected (${state.size.cols}×${state.size.rows})`;
    case 'closed':
      return `closed: ${state.why}`;
  }
}

/** The longest reason from the other end shown: a close reason is at most 123 bytes anyway. */
const REASON_CHARS = 120;

/** A close reason as text: the gateway's `{"reason": …}`, or the plain words of the sandbox's end; control characters dropped (the sandbox may send anything). */
function reasonText(reason: string): string {
  let said = reason;
  try {
    const parsed = JSON.parse(reason) as unknown;
    if (parsed && typeof parsed === 'object' && typeof (parsed as { reason?: unknown }).reason === 'string') said = (parsed as { reason: string }).reason;
  } catch {
    // Plain words.
  }
  return said
    .replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' ')
    .trim()
    .slice(0, REASON_CHARS);
}

/**
 * Why a terminal's socket closed, in words (docs/workspace.md, "The terminal"): its close code,
 * with the reason the other end gave, in brackets after the console's own words (the gateway
 * passes on the sandbox's code and reason: what the sandbox says is never the whole line).
 * `byYou`: the person closed it here. A browser is not told why an upgrade failed (it sees
 * 1006): `refusalText` says that, from the gateway's answer.
 */
export function closedText({ code, reason, byYou }: { code: number; reason: string; byYou: boolean }): string {
  if (byYou) return 'you closed it';
  const said = reasonText(reason);
  switch (code) {
    case TERMINAL_CLOSE.shellEnded:
      return said ? `the shell ended (${said})` : 'the shell ended';
    case TERMINAL_CLOSE.sandboxUnanswered:
      return `the sandbox's sidecar did not answer within ${TERMINAL_CONNECT_TIMEOUT_MS / 1000} s`;
    case TERMINAL_CLOSE.otherEndGone:
      return said ? `the sandbox's end went (${said})` : "the sandbox's end went";
    case STREAM_CLOSE.serverRestart:
      return 'the gateway is restarting: open it again in a moment';
    case STREAM_CLOSE.unavailable:
      return said ? `the terminal failed (${said})` : 'the terminal failed';
    case 1006:
      return 'the connection was lost';
    default:
      return said ? `the connection closed (code ${code}: ${said})` : `the connection closed (code ${code})`;
  }
}

/** The refusals a plain request cannot show, or a socket that never reached the gateway. */
const COULD_NOT_CONNECT = 'could not connect: the network, or too many of your streams are open (other tabs, terminals): close one and open again';

/**
 * Why a terminal could not be opened, from the gateway's answer to the same path as a plain
 * request: `404` the worker is not there or not yours, `409 worker_ended`. A path it would have
 * taken (`400`: not a WebSocket, or no error at all) leaves the network, or a refusal only an
 * upgrade is told: too many of the person's streams open (`429`).
 */
export function refusalText(answer: unknown): string {
  if (answer instanceof ApiError) {
    if (answer.code === 'worker_not_found') return 'no such worker here, or it is not yours';
    return answer.code === 'invalid_request' ? COULD_NOT_CONNECT : answer.message;
  }
  return answer instanceof Error ? `could not connect: ${reasonOf(answer)}` : COULD_NOT_CONNECT;
}
