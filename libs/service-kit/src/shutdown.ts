import type { Logger } from 'pino';

/** Something to close at shutdown (drain NATS, close the database, stop a server). */
interface Closer {
  name: string;
  close(): Promise<void> | void;
}

export interface GracefulShutdown {
  /** Registers a closer; closers run in reverse order of registration (last opened, first closed). */
  add(closer: Closer): void;
  /** Runs every closer once, then exits with `exitCode` (1 if a closer failed or the deadline passed). */
  shutdown(reason: string, exitCode?: number): Promise<void>;
  /** Makes SIGTERM and SIGINT call `shutdown`. */
  installSignalHandlers(): void;
}

export interface ShutdownOptions {
  logger: Logger;
  /** How long closers may take together before the process exits anyway. */
  timeoutMs?: number;
  /** Process exit; tests pass their own. */
  exit?: (code: number) => void;
}

/** Coordinates a clean stop: SIGTERM drains work, closes NATS and the database, then exits. */
export function createGracefulShutdown(options: ShutdownOptions): GracefulShutdown {
  const { logger } = options;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const exit = options.exit ?? ((code: number) => process.exit(code));
  const closers: Closer[] = [];
  let running: Promise<void> | undefined;

  async function closeAll(): Promise<boolean> {
    let clean = true;
    for (const closer of [...closers].reverse()) {
      try {
        await closer.close();
        logger.debug({ closer: closer.name }, 'closed');
      } catch (err) {
        clean = false;
        logger.error({ err, closer: closer.name }, 'close failed');
      }
    }
    return clean;
  }

  async function run(reason: string, exitCode: number): Promise<void> {
    logger.info({ reason }, 'shutting down');
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), timeoutMs);
      timer.unref();
    });
    const outcome = await Promise.race([closeAll(), deadline]);
    clearTimeout(timer);
    if (outcome === 'timeout') {
      logger.error({ timeoutMs }, 'shutdown deadline passed; exiting anyway');
      exit(1);
    } else {
      logger.info('stopped');
      exit(outcome ? exitCode : 1);
    }
  }

  function shutdown(reason: string, exitCode = 0): Promise<void> {
    running ??= run(reason, exitCode);
    return running;
  }

  return {
    add: (closer) => void closers.push(closer),
    shutdown,
    installSignalHandlers() {
      for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => void shutdown(signal));
    },
  };
}
