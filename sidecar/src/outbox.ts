import path from 'node:path';
import { apiPaths, MAX_EVENTS_PER_POST, SYSTEM_SUBTYPES, type IncomingEvent } from '@svc/protocol';
import type { AgentEvent } from './adapters/adapter.js';
import { backoffMs, type ControlPlaneClient } from './http-client.js';
import { SpillFile } from './spill-file.js';

export interface OutboxOptions {
  client: ControlPlaneClient;
  workerId: string;
  /** Unique per sidecar start: uids are `<boot-id>:<n>`. */
  bootId: string;
  stateDir: string;
  /** The most bytes waiting on disk; beyond it `hasRoom()` is false until some are sent. */
  bufferMaxBytes: number;
  /** Events per POST (at most the API's 500). */
  maxBatch?: number;
  /** How long the first event of a batch waits for company. */
  flushMs?: number;
  /** Events kept in memory before new ones go to disk. */
  memoryLimit?: number;
  /** The sidecar's own diagnostics (stderr). */
  warn(message: string): void;
}

/** Sent in place of an event the control plane refused, so the history shows that something was lost. */
function refusalNote(event: IncomingEvent): IncomingEvent {
  return {
    type: 'system',
    uid: `${event.uid}:refused`,
    ts: new Date().toISOString(),
    data: { level: 'warn', message: `an event of type ${event.type} was refused by the control plane`, subtype: SYSTEM_SUBTYPES.eventRefused },
  };
}

/**
 * Posts batches of events until each is taken: what may pass later is retried (until
 * `abandon()`), a 400 or 413 is narrowed down to the event it is about (which is then noted
 * as refused), any other refusal ends delivery for good (`failure()` says why).
 */
function createEventPoster(options: OutboxOptions) {
  /** Set when a deadline passed on close: stop trying, what is left stays on disk. */
  let abandoned = false;
  let failed: string | undefined;

  /** Posts one batch until it is taken; a 400 or 413 (too large) is narrowed down to the event it is about. */
  async function deliver(batch: IncomingEvent[]): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const outcome = await options.client.send('POST', apiPaths.sdkEvents(options.workerId), { events: batch });
      if (outcome.ok) return;
      if (outcome.retryable) {
        if (abandoned) throw new Error('abandoned: the events stay on disk for the next start');
        if (attempt === 0) options.warn(`events not delivered (${outcome.reason}); keeping them and trying again`);
        await new Promise((resolve) => setTimeout(resolve, backoffMs(attempt, outcome.retryAfterMs)));
        continue;
      }
      const refused = outcome.reason.includes(' 400 ') || outcome.reason.includes(' 413 ');
      if (refused && batch.length > 1) {
        for (const event of batch) await deliver([event]);
        return;
      }
      if (refused) {
        // The control plane refuses this event: keep a trace of it rather than lose it silently.
        options.warn(`the control plane refused event ${batch[0]!.uid}: ${outcome.reason}`);
        await deliver([refusalNote(batch[0]!)]);
        return;
      }
      failed = outcome.reason;
      throw new Error(`events cannot be delivered: ${outcome.reason}`);
    }
  }

  return {
    deliver,
    /** Stops retrying: a batch being retried fails at its next attempt. */
    abandon(): void {
      abandoned = true;
    },
    abandoned: () => abandoned,
    failure: () => failed,
  };
}

/**
 * Every event the agent produces, delivered in order, each exactly once (the gateway and the
 * store drop a repeated uid). Events wait in memory; when the control plane does not answer, or
 * memory holds `memoryLimit` events, new ones go to `outbox.jsonl` in the state directory and
 * everything is sent from there, in order, when it answers again. A sidecar that starts and
 * finds that file sends its events first (they keep their uids, so a repeat stores nothing).
 */
export function createOutbox(options: OutboxOptions) {
  const maxBatch = Math.min(options.maxBatch ?? 100, MAX_EVENTS_PER_POST);
  const flushMs = options.flushMs ?? 5;
  const memoryLimit = options.memoryLimit ?? 1000;
  const spill = new SpillFile(path.join(options.stateDir, 'outbox.jsonl'));
  const poster = createEventPoster(options);
  const memory: IncomingEvent[] = [];
  let next = 0;
  let wakeSender: (() => void) | undefined;
  const roomWaiters: Array<() => void> = [];
  let closing = false;

  function toDisk(event: IncomingEvent): void {
    if (!spill.waiting) options.warn(`${memory.length} events wait in memory; the next ones wait on disk (${spill.path})`);
    spill.append(event);
  }

  function loadFromDisk(): void {
    const loaded = spill.readNext();
    if (loaded.length === 0) return;
    memory.push(...loaded);
    for (const resolve of roomWaiters.splice(0)) resolve();
  }

  const sender = (async () => {
    for (;;) {
      // Abandoned on close: the spill file has been rewritten; touch nothing more.
      if (poster.abandoned()) return;
      if (memory.length === 0 && spill.waiting) loadFromDisk();
      if (memory.length === 0) {
        if (closing) return;
        await new Promise<void>((resolve) => (wakeSender = resolve));
        wakeSender = undefined;
        continue;
      }
      if (memory.length < maxBatch && !closing) await new Promise((resolve) => setTimeout(resolve, flushMs));
      const batch = memory.slice(0, maxBatch);
      try {
        await poster.deliver(batch);
      } catch (err) {
        options.warn((err as Error).message);
        return;
      }
      memory.splice(0, batch.length);
      if (!spill.waiting) for (const resolve of roomWaiters.splice(0)) resolve();
    }
  })();

  return {
    /** Queues an event (uid and ts assigned now). */
    push(event: AgentEvent): void {
      const incoming = { ...event, uid: `${options.bootId}:${next++}`, ts: new Date().toISOString() } as IncomingEvent;
      // Once anything is on disk, everything goes there, so order holds.
      if (spill.waiting || memory.length >= memoryLimit) toDisk(incoming);
      else memory.push(incoming);
      wakeSender?.();
    },

    /** False while the disk buffer is full: stop reading the agent (it waits on its pipe) until `room()`. */
    hasRoom: () => spill.bytesWaiting < options.bufferMaxBytes,
    room: () => new Promise<void>((resolve) => roomWaiters.push(resolve)),

    /** Events not yet taken by the control plane. */
    pending: () => memory.length + (spill.waiting ? 1 : 0),
    failure: poster.failure,

    /**
     * Sends everything queued, then stops. With `deadlineMs`, gives up when it passes: what is
     * not sent yet is written to `outbox.jsonl`, in order, and the next start sends it (an
     * event that was in flight may be sent twice; its uid makes the repeat harmless).
     * Resolves with whether everything was sent.
     */
    async close(deadlineMs?: number): Promise<boolean> {
      closing = true;
      wakeSender?.();
      if (deadlineMs === undefined) {
        await sender;
        return true;
      }
      let timer: NodeJS.Timeout | undefined;
      const drained = await Promise.race([sender.then(() => true), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), deadlineMs)))]);
      clearTimeout(timer);
      if (drained) return true;
      poster.abandon();
      spill.rewrite(memory);
      options.warn(
        `the control plane did not take every event in ${deadlineMs} ms; ${memory.length} and what was on disk stay in ${spill.path} for the next start`,
      );
      return false;
    },
  };
}
