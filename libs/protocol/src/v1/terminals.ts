import Type from 'typebox';
import type { EventData } from './events.js';
import type { StoredEvent } from './envelope.js';
import { parseSource } from './provenance.js';
import { SYSTEM_SUBTYPES } from './system-subtypes.js';

/**
 * Terminals into a sandbox (docs/workspace.md, "The terminal"): a person opens one
 * (`GET /v1/workers/{id}/terminal`, a WebSocket); the request reaches the sidecar through its
 * control channel, which opens a WebSocket of its own outward through the worker port
 * (`…/terminals/{terminal_id}`), and the gateways relay the two over NATS.
 */

export const TerminalQuery = Type.Object({
  cols: Type.Integer({ minimum: 10, maximum: 1000, default: 80 }),
  rows: Type.Integer({ minimum: 2, maximum: 500, default: 24 }),
});

export const TerminalParams = Type.Object({
  id: Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$' }),
  terminal_id: Type.String({ pattern: '^trm_[A-Za-z0-9_-]{1,64}$' }),
});

/** How long a person's terminal waits for the sandbox's end to connect. */
export const TERMINAL_CONNECT_TIMEOUT_MS = 15_000;

/** The close code of a terminal whose sandbox did not answer, or whose shell ended (WebSocket application codes). */
export const TERMINAL_CLOSE = { shellEnded: 4000, sandboxUnanswered: 4001, otherEndGone: 4002 } as const;

/** The history's record of a person's terminal request: what the sidecar acts on. */
export function terminalRequestData(terminalId: string, size: { cols: number; rows: number }): EventData<'system'> {
  return {
    level: 'info',
    message: 'A person opened a terminal in the sandbox.',
    subtype: SYSTEM_SUBTYPES.terminalRequested,
    details: { terminal_id: terminalId, cols: size.cols, rows: size.rows },
  };
}

/** Whether a stored event is a person's terminal request (the subtype is the control plane's, the source a person's). */
export function isTerminalRequest(event: Pick<StoredEvent, 'type' | 'data' | 'source'>): event is StoredEvent<'system'> {
  return (
    event.type === 'system' && (event.data as EventData<'system'>).subtype === SYSTEM_SUBTYPES.terminalRequested && parseSource(event.source).kind === 'person'
  );
}

/** A terminal request's id and size. */
export function terminalRequestOf(event: StoredEvent<'system'>): { terminalId: string; cols: number; rows: number } | undefined {
  const details = event.data.details ?? {};
  const [terminalId, cols, rows] = [details['terminal_id'], details['cols'], details['rows']];
  if (typeof terminalId !== 'string' || !/^trm_[A-Za-z0-9_-]{1,64}$/.test(terminalId)) return undefined;
  return { terminalId, cols: typeof cols === 'number' ? cols : 80, rows: typeof rows === 'number' ? rows : 24 };
}
