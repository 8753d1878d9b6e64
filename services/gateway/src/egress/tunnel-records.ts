import { randomUUID } from 'node:crypto';
import { EGRESS_SUBTYPE, type EgressTarget, type IncomingEvent } from '@svc/protocol';
import type { ResolvedTarget } from './egress-rules.js';

/**
 * A tunnel opened or refused, as the worker's history shows it (docs/egress.md "In the gateway"):
 * before the target is resolved, the target as asked; from then on, as rules read it, with the
 * addresses it resolved to.
 */
export function tunnelEvent(
  asked: EgressTarget,
  target: ResolvedTarget | undefined,
  level: 'info' | 'warn',
  outcome: string,
  details: Record<string, unknown>,
): Omit<IncomingEvent, 'ts'> {
  return {
    type: 'system',
    uid: `egress:${randomUUID()}`,
    data: {
      level,
      subtype: EGRESS_SUBTYPE,
      message: `egress to ${asked.target}: ${outcome}`,
      details: { target: target?.target ?? asked.target, ...(target ? { addresses: target.addresses.map(({ address }) => address) } : {}), ...details },
    },
  };
}
