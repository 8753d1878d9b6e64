import type { ConsumerMessages, JsMsg } from '@nats-io/jetstream';
import { retryWithBackoff, type Logger } from '@svc/service-kit';
import { isBusUnavailable } from './connection.js';

export interface LastingConsumption {
  /** Stops taking messages; resolves once the message in hand is handled. */
  stop(): Promise<void>;
}

export interface LastingOptions {
  logger: Logger;
  /** What is consumed, in log lines. */
  what: string;
  /** Called when the messages are opened again (what was taken but not handled will come again). */
  onReopen?: () => void;
}

/**
 * Hands every message of a JetStream consumer to `handle`, one at a time, for as long as the
 * process runs. Resolves once the messages are open: a JetStream that does not answer yet (a
 * cluster still electing leaders after a server's loss) is waited out with back-off, while a
 * refusal (a permission, a bad configuration) fails the service's start. When the consumer's
 * messages later fail or end without being stopped (a cluster's server lost with the consumer,
 * the stream's leader moved, NATS away too long), they are opened again with `open` (which
 * makes the consumer again if it is gone) after a pause that doubles up to 5 s. Nothing
 * escapes: a loop that rejected, unawaited, would end the process.
 */
export async function consumeLasting(
  open: () => Promise<ConsumerMessages>,
  handle: (msg: JsMsg) => Promise<void> | void,
  options: LastingOptions,
): Promise<LastingConsumption> {
  const log = options.logger;
  let messages: ConsumerMessages | undefined = await retryWithBackoff(`opening the consumer ${options.what}`, open, {
    logger: log,
    retryable: isBusUnavailable,
  });
  let stopping = false;
  const loop = (async () => {
    for (let failures = 0; !stopping;) {
      try {
        messages ??= await open();
        for await (const msg of messages) {
          failures = 0;
          await handle(msg);
        }
        if (!stopping) log.warn({ consumer: options.what }, 'the consumer ended; opening it again');
      } catch (err) {
        if (stopping) return;
        log.warn({ err, consumer: options.what }, 'the consumer failed; opening it again');
      }
      messages = undefined;
      options.onReopen?.();
      failures++;
      await new Promise((resolve) => setTimeout(resolve, Math.min(5_000, 100 * 2 ** failures)));
    }
  })();
  return {
    async stop() {
      stopping = true;
      await messages?.close();
      await loop;
    },
  };
}
