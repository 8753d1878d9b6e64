import { traceContextOf, type JsMsg } from '@svc/bus';
import { contextOf, endSpan, linkTo, SpanKind, startSpan, tracingEnabled, type Context, type Link, type Span } from '@svc/service-kit';

/**
 * A batch's place in the traces of its messages (docs/tracing.md). Each worker's share gets an
 * `ingest` span: the child of its first traced message's span (the gateway's request, across the
 * NATS hop), linked to the others' (one commit serves many requests). Under it, `store append`
 * (the batch's one transaction) and `announce` (whose context the announcement carries on to the
 * gateways' WebSocket sends).
 */
export class BatchTrace {
  private constructor(private readonly spans: ReadonlyArray<Span | undefined>) {}

  /** The batch's trace, one entry per share; undefined with tracing off or no traced message. */
  static of(shares: ReadonlyArray<{ workerId: string; msgs: readonly JsMsg[] }>): BatchTrace | undefined {
    if (!tracingEnabled()) return undefined;
    const spans = shares.map((share) => shareSpan(share.workerId, share.msgs));
    return spans.some((span) => span !== undefined) ? new BatchTrace(spans) : undefined;
  }

  /** The append of the whole batch, from `startTime` (ms since the epoch) until now, under each share's span. */
  appended(startTime: number): void {
    for (const span of this.spans)
      if (span) startSpan('store append', { parent: contextOf(span), startTime, attributes: { 'db.system.name': 'postgresql' } }).end();
  }

  /** Runs the share's announcement in an `announce` span; `announce` gets the context its message carries. */
  async announcing(share: number, announce: (trace: Context | undefined) => Promise<void>): Promise<void> {
    const parent = this.spans[share];
    if (!parent) return announce(undefined);
    const span = startSpan('announce', { kind: SpanKind.PRODUCER, parent: contextOf(parent) });
    try {
      await announce(contextOf(span));
      endSpan(span);
    } catch (err) {
      endSpan(span, err);
      throw err;
    }
  }

  /** Ends every share's span (failed, with `err`). */
  end(err?: unknown): void {
    for (const span of this.spans) if (span) endSpan(span, err);
  }
}

function shareSpan(workerId: string, msgs: readonly JsMsg[]): Span | undefined {
  let parent: Context | undefined;
  const links: Link[] = [];
  for (const msg of msgs) {
    const ctx = traceContextOf(msg);
    if (!ctx) continue;
    if (!parent) parent = ctx;
    else {
      const link = linkTo(ctx);
      if (link) links.push(link);
    }
  }
  if (!parent) return undefined;
  return startSpan('ingest', {
    kind: SpanKind.CONSUMER,
    parent,
    links,
    attributes: { 'svc.worker_id': workerId, 'messaging.batch.message_count': msgs.length },
  });
}
