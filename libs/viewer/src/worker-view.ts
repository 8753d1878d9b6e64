import { activityOf, parseSource, withdrawnRequestId, type EventData, type StoredEvent, type WorkerActivity, workerEndingExitCodeOf } from '@svc/protocol';

export type ConnectionState =
  | { kind: 'connecting' }
  | { kind: 'replaying' }
  | { kind: 'live' }
  | { kind: 'reconnecting'; attempt: number; inMs: number; reason: string }
  /** The network is gone (a browser says so): nothing is tried until it is back. */
  | { kind: 'offline' }
  | { kind: 'closed'; reason: string };

/** How a request stopped waiting: its first decision, or the agent withdrew it. */
/** How a request closed: its decision (and the decision's source: who wrote it), or the agent withdrew it. */
export type Closing =
  { decision: EventData<'control_response'>; source: string; withdrawn?: undefined } | { withdrawn: true; decision?: undefined; source?: undefined };

/** A short-lived line under the history: a reconnect, a prompt decided elsewhere, an error. */
export interface Notice {
  text: string;
  level: 'info' | 'warn' | 'error';
}

/**
 * Everything a viewer of one worker shows — `svc attach` in a terminal, the console's worker page
 * in a browser — built from the stored events in id order (pure: no I/O, no rendering). The
 * history is kept as the events themselves, a flat array: a 100,000-event replay is one array of
 * objects, and a renderer draws only the rows it shows.
 */
export class WorkerView {
  readonly events: StoredEvent[] = [];
  /** The last id applied: reconnects resume after it. */
  lastId = '0';
  /**
   * Events before the first one held are still to be read (`before_id`): the view was opened at
   * the end of a long history (`openAtEnd`). Ids are contiguous from 1, so the first id says it.
   */
  hasEarlier = false;
  /** Open requests in the order they arrived; the first is the prompt on screen. */
  private readonly open = new Map<string, StoredEvent<'control_request'>>();
  /** Requests this viewer decided (so their closing is not "decided elsewhere"). */
  private readonly decidedHere = new Set<string>();
  /** How each closed request was closed: its first decision, or the agent's withdrawal. */
  private readonly closings = new Map<string, Closing>();
  progress: EventData<'progress'> | undefined;
  result: EventData<'result'> | undefined;
  /** The agent has exited for good (the sidecar reported it; not an exit a message resumes). */
  agentExit: number | undefined;
  /** What the agent is doing, as its sidecar last reported (docs/conversations.md, "Activity"); none once it has exited for good. */
  activity: WorkerActivity | undefined;
  notices: Notice[] = [];
  connection: ConnectionState = { kind: 'connecting' };
  /** No prompts, no decisions: `--read-only`, or the worker has ended. */
  readOnly: boolean;
  /** Rows scrolled up from the bottom (0: following the newest); the terminal's, a browser scrolls itself. */
  scroll = 0;
  /** Bumped on every change: a renderer redraws when it moves. */
  version = 0;

  constructor(options: { readOnly: boolean }) {
    this.readOnly = options.readOnly;
  }

  /** Applies one stored event; an id at or below the last one is a repeat and is ignored. */
  apply(event: StoredEvent): boolean {
    if (BigInt(event.id) <= BigInt(this.lastId)) return false;
    this.events.push(event);
    this.lastId = event.id;
    switch (event.type) {
      case 'control_request': {
        const request = event as StoredEvent<'control_request'>;
        const requestId = request.data.request_id;
        // The first request under an id is the one a decision applies to (the store, the rules and
        // the audit trail go by it): a repeat never replaces what a person is shown, nor reopens one.
        if (!this.open.has(requestId) && !this.closings.has(requestId)) this.open.set(requestId, request);
        break;
      }
      case 'control_response': {
        const decision = (event as StoredEvent<'control_response'>).data;
        if (!this.closings.has(decision.request_id)) this.closings.set(decision.request_id, { decision, source: event.source });
        const wasShown = this.prompt()?.data.request_id === decision.request_id;
        if (this.open.delete(decision.request_id) && wasShown && !this.decidedHere.has(decision.request_id)) {
          this.notify(`${decision.decision === 'allow' ? 'allowed' : 'denied'}: decided by ${deciderOf(decision, event.source)}`, 'info');
        }
        break;
      }
      case 'progress':
        this.progress = (event as StoredEvent<'progress'>).data;
        break;
      case 'result':
        this.result = (event as StoredEvent<'result'>).data;
        break;
      case 'system': {
        const withdrawn = withdrawnRequestId(event);
        if (withdrawn !== undefined && !this.closings.has(withdrawn)) this.closings.set(withdrawn, { withdrawn: true });
        if (withdrawn !== undefined && this.open.delete(withdrawn)) this.notify(`request ${withdrawn} withdrawn by the agent`, 'info');
        // An exit a message resumes (a conversation's agent stopped when idle) ends nothing.
        const code = workerEndingExitCodeOf(event);
        if (code !== undefined) {
          this.agentExit = code;
          this.activity = undefined;
        }
        this.activity = activityOf(event) ?? this.activity;
        break;
      }
    }
    this.version++;
    return true;
  }

  /** The prompt on screen (the oldest open request), unless read-only. */
  prompt(): StoredEvent<'control_request'> | undefined {
    if (this.readOnly) return undefined;
    return this.open.values().next().value;
  }

  /** Every open request, oldest first (none when read-only): the console pins them all. */
  openRequests(): StoredEvent<'control_request'>[] {
    return this.readOnly ? [] : [...this.open.values()];
  }

  /** How a request was closed (decided, and by whom; or withdrawn), once the view has seen it. */
  closingOf(requestId: string): Closing | undefined {
    return this.closings.get(requestId);
  }

  openCount(): number {
    return this.readOnly ? 0 : this.open.size;
  }

  /**
   * Starts the view at the end of the history: the requests still open (read first, they may be
   * older than the tail), then the tail, applied as live events are. Nothing before the tail is
   * held; `prepend` adds it as it is read.
   */
  startAt(openRequests: readonly StoredEvent<'control_request'>[], tail: readonly StoredEvent[], activity?: WorkerActivity): void {
    // The worker's record says the activity reported before the tail (the tail may say it again).
    this.activity = activity;
    for (const request of openRequests) this.open.set(request.data.request_id, request);
    for (const event of tail) this.apply(event);
    this.hasEarlier = BigInt(this.events[0]?.id ?? '1') > 1n;
    this.version++;
  }

  /**
   * Earlier events (those just before the first one held, in id order) go in front: history, so
   * they open or close no request and move no totals. Anything not just before is refused.
   */
  prepend(earlier: readonly StoredEvent[]): number {
    const first = this.events[0];
    if (earlier.length === 0 || !first) return 0;
    const fits = earlier.every((event, index) => BigInt(event.id) === BigInt(first.id) - BigInt(earlier.length - index));
    if (!fits) throw new Error(`events ${earlier[0]!.id}…${earlier.at(-1)!.id} are not the ones just before #${first.id}`);
    this.events.unshift(...earlier);
    this.hasEarlier = BigInt(earlier[0]!.id) > 1n;
    this.version++;
    return earlier.length;
  }

  /** This viewer decided `requestId` (its response event will close the prompt). */
  decided(requestId: string): void {
    this.decidedHere.add(requestId);
    this.open.delete(requestId);
    this.version++;
  }

  setReadOnly(reason: string): void {
    if (this.readOnly) return;
    this.readOnly = true;
    this.notify(`read-only: ${reason}`, 'info');
  }

  setConnection(state: ConnectionState): void {
    this.connection = state;
    this.version++;
  }

  notify(text: string, level: Notice['level']): void {
    this.notices = [...this.notices.slice(-2), { text, level }];
    this.version++;
  }

  scrollBy(rows: number): void {
    const next = Math.max(0, Math.min(this.events.length - 1, this.scroll + rows));
    if (next === this.scroll) return;
    this.scroll = next;
    this.version++;
  }
}

/**
 * Who decided, for a person to read, from the decision's source (who wrote it), never from a name
 * in its data alone: a person's name (when stored with their `sub`), else the `sub`; the worker's
 * own rules; the control plane's policy (a deadline). A decision without a known source is the
 * worker's word (docs/protocol.md, "Sources").
 */
export function deciderOf(decision: EventData<'control_response'>, source: string | undefined): string {
  const decider = parseSource(source);
  switch (decider.kind) {
    case 'person':
      return decision.decided_by === decider.sub && decision.decided_by_name ? decision.decided_by_name : decider.sub;
    case 'worker_policy':
      return 'the policy';
    case 'policy':
      return decision.decided_by === 'policy:timeout' ? 'the timeout policy' : "the control plane's policy";
    default:
      return 'the worker';
  }
}
