import { type NatsConnection } from '@svc/bus';
import { LOG_FOLLOW_KEEPALIVE_TIMEOUT_MS, subjects, type FollowLogsRpcType, type SessionLogMessageType } from '@svc/protocol';
import type { Logger } from '@svc/service-kit';
import type { Sandbox } from './sandbox/provider.js';

/** Lines sent in one message at most (a burst of output becomes few messages). */
const LINES_PER_MESSAGE = 200;

/**
 * Sends a sandbox's logs to a follower (the gateway's WebSocket): the last `tail` lines, then
 * each new line, gathered per event-loop turn. It ends when the sandbox's programs have ended
 * and every line is sent, when the follower says stop, or when its keepalives stop coming.
 */
export function followSandboxLogs(options: { nc: NatsConnection; sandbox: Sandbox | undefined; request: FollowLogsRpcType; logger: Logger }): void {
  const { nc, sandbox, request } = options;
  const log = options.logger.child({ component: 'logs', session_id: request.session_id, follow_id: request.follow_id });
  const send = (message: SessionLogMessageType) => nc.publish(request.deliver_to, JSON.stringify(message));
  if (!sandbox) {
    send({ kind: 'end', reason: 'the session has no sandbox (it failed before one was made)' });
    return;
  }
  const abort = new AbortController();
  let endReason = 'the sandbox has ended';
  let keepaliveTimer = setTimeout(() => stop('the follower stopped sending keepalives'), LOG_FOLLOW_KEEPALIVE_TIMEOUT_MS);
  const keepalive = nc.subscribe(subjects.logFollowKeepalive(request.follow_id), {
    callback: () => {
      clearTimeout(keepaliveTimer);
      keepaliveTimer = setTimeout(() => stop('the follower stopped sending keepalives'), LOG_FOLLOW_KEEPALIVE_TIMEOUT_MS);
    },
  });
  const stopRequest = nc.subscribe(subjects.logFollowStop(request.follow_id), { max: 1, callback: () => stop('the follower stopped') });
  function stop(reason: string) {
    endReason = reason;
    abort.abort();
  }

  let batch: string[] = [];
  let flushQueued = false;
  const flush = () => {
    flushQueued = false;
    if (batch.length === 0) return;
    send({ kind: 'lines', lines: batch });
    batch = [];
  };
  void (async () => {
    try {
      for await (const line of sandbox.logs({ tail: request.tail, follow: true, signal: abort.signal })) {
        batch.push(line);
        if (batch.length >= LINES_PER_MESSAGE) flush();
        else if (!flushQueued) {
          flushQueued = true;
          setImmediate(flush);
        }
      }
    } catch (err) {
      endReason = `the logs could not be read: ${(err as Error).message}`;
      log.warn({ err }, 'sandbox logs failed');
    } finally {
      flush();
      send({ kind: 'end', reason: endReason });
      clearTimeout(keepaliveTimer);
      keepalive.unsubscribe();
      stopRequest.unsubscribe();
    }
  })();
}
