/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/), the header that carries a trace from
 * one process to the next: over HTTP and in NATS message headers (docs/tracing.md).
 */
export const TRACEPARENT_HEADER = 'traceparent';

const hex = (bytes: number) => Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (byte) => byte.toString(16).padStart(2, '0')).join('');

/**
 * The `traceparent` of a new, sampled trace (version 00), for a process that exports no spans of
 * its own (the sidecar, whose sandbox reaches no collector): its request starts the trace that the
 * gateway continues.
 */
export function newTraceparent(): string {
  return `00-${hex(16)}-${hex(8)}-01`;
}
