import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { apiPaths, type ListResponseOf, type StoredEvent } from '@svc/protocol';
import { backoffMs, type ControlPlaneClient } from './http-client.js';

export interface ControlChannelPollerOptions {
  client: ControlPlaneClient;
  workerId: string;
  stateDir: string;
  /** The long poll's `wait_ms`. */
  waitMs: number;
  /** Pause after an empty answer when not long-polling. */
  pollIntervalMs: number;
  /**
   * Readies an input before anything else is done with it (fetches a message's images); a
   * rejection leaves the input and those after it for the next poll, after a pause.
   */
  prepare?(input: StoredEvent): Promise<void>;
  /** Called once per input before the cursor moves past it (what must survive a crash between the two). */
  onReceived?(input: StoredEvent): void;
  /** Called once per input, in id order, after the cursor has moved past it. */
  onInput(input: StoredEvent): void;
  warn(message: string): void;
}

/**
 * Long-polls `GET …/control/pending` (decisions, people's messages and interrupts) from the cursor kept in
 * `control-cursor` in the state directory. The cursor is saved (atomically: written aside, then
 * renamed) before an input is handed on, so a restarted sidecar never hands on one twice. A
 * decision whose hand-over was cut short by a crash belonged to the agent that died with the
 * sidecar; the new agent never asked for it. A person's message is kept by the runner before the
 * cursor moves (`onReceived`), so a sidecar started again can hand it over again where the agent
 * never took it (docs/conversations.md, "Exactly once").
 */
export function createControlChannelPoller(options: ControlChannelPollerOptions) {
  const cursorPath = path.join(options.stateDir, 'control-cursor');
  let cursor = '0';
  try {
    cursor = readFileSync(cursorPath, 'utf8').trim() || '0';
  } catch {
    // No cursor yet: from the start.
  }
  const abort = new AbortController();

  function save(id: string): void {
    writeFileSync(`${cursorPath}.tmp`, id);
    renameSync(`${cursorPath}.tmp`, cursorPath);
    cursor = id;
  }

  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(options.pollIntervalMs, ms)));

  /** Hands on a page's inputs in order; resolves with why it stopped early (an input not ready), the cursor before that input. */
  async function handOn(inputs: readonly StoredEvent[]): Promise<Error | undefined> {
    for (const input of inputs) {
      try {
        await options.prepare?.(input);
      } catch (err) {
        return err instanceof Error ? err : new Error(String(err));
      }
      if (abort.signal.aborted) return undefined;
      options.onReceived?.(input);
      save(input.id);
      options.onInput(input);
    }
    return undefined;
  }

  const loop = (async () => {
    for (let failures = 0; !abort.signal.aborted;) {
      const outcome = await options.client.send(
        'GET',
        apiPaths.pendingInputs(options.workerId, { after_id: cursor, wait_ms: options.waitMs, limit: 100 }),
        undefined,
        abort.signal,
      );
      if (abort.signal.aborted) return;
      if (!outcome.ok) {
        if (failures === 0) options.warn(`control channel poll failed (${outcome.reason}); trying again`);
        await pause(backoffMs(failures++, outcome.retryAfterMs));
        continue;
      }
      failures = 0;
      const page = outcome.body as ListResponseOf<StoredEvent>;
      const unready = await handOn(page.items);
      if (unready) {
        options.warn(`${unready.message}; polling again`);
        await pause(backoffMs(failures++, (unready as { retryAfterMs?: number }).retryAfterMs));
        continue;
      }
      if (page.items.length === 0 && options.waitMs === 0) await new Promise((resolve) => setTimeout(resolve, options.pollIntervalMs));
    }
  })();

  return {
    cursor: () => cursor,
    async stop(): Promise<void> {
      abort.abort();
      await loop;
    },
  };
}
