import { createConcurrencyCap } from '../stream-limits.js';

/**
 * The most model requests one worker may have in flight on a gateway replica. Each may hold a
 * body of up to `MAX_REQUEST_BYTES` while it is read and checked, so this bounds what one worker
 * can make a replica buffer; the CLIs run a few at a time (a turn, a sub-agent or two).
 */
export const MAX_REQUESTS_IN_FLIGHT = 16;

export interface InFlightLimit {
  /** Takes one of the worker's places, or undefined when it has none left; the place is held until `release`. */
  acquire(workerId: string): (() => void) | undefined;
}

/** Counts each worker's model requests in flight on this replica (docs/model-proxy.md, "What passes"). */
export function createInFlightLimit(max = MAX_REQUESTS_IN_FLIGHT): InFlightLimit {
  const cap = createConcurrencyCap(max);
  return { acquire: (workerId) => cap.claim(workerId) };
}
