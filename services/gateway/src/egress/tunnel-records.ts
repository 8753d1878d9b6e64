import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { createIncomingEventPublisher, type NatsConnection } from '@svc/bus';
import { componentSource, EGRESS_SUBTYPE, type EgressTarget, type EventSource, type IncomingEvent } from '@svc/protocol';
import type { ResolvedTarget } from './egress-rules.js';

/** What the egress proxy writes in a worker's history. */
export interface TunnelRecords {
  /**
   * Records an event of the egress proxy's (or, with `source`, of the policy it applied). A
   * failure is logged, not thrown: a tunnel is decided and answered whether or not its record lands.
   */
  record(workerId: string, event: Omit<IncomingEvent, 'ts'>, source?: EventSource): Promise<void>;
  close(): void;
}

export function createTunnelRecords(nc: NatsConnection, log: FastifyBaseLogger): TunnelRecords {
  const publisher = createIncomingEventPublisher(nc, componentSource('egress'));
  return {
    record(workerId, event, source) {
      return publisher.publish(workerId, { ...event, ts: new Date().toISOString() } as IncomingEvent, source ? { source } : {}).then(
        () => undefined,
        (err: unknown) => log.warn({ err, worker_id: workerId }, 'could not record an egress event'),
      );
    },
    close: () => publisher.close(),
  };
}

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
