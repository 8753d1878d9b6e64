import { openSync } from 'node:fs';
import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import { activeTraceId } from './tracing.js';

export type { Logger } from 'pino';

/**
 * Member names whose values are secrets. Wherever one appears in a log call's object (up to
 * four levels deep), its value is replaced with "[redacted]", so a token reaches no log line even
 * by mistake. (A name check on each member is faster than pino's wildcard redaction paths,
 * docs/benchmarks.md#gateway-baseline, and catches the names at any depth.)
 */
const SECRET_KEYS: ReadonlySet<string> = new Set([
  'token',
  'auth_token',
  'authToken',
  'access_token',
  'accessToken',
  'refresh_token',
  'id_token',
  'password',
  'secret',
  'authorization',
  'Authorization',
  'cookie',
  // A browser's WebSocket offers its token as a subprotocol (the gateway's console support).
  'sec-websocket-protocol',
  'x-api-key',
  'api_key',
  'apiKey',
]);

const REDACTED = '[redacted]';
const NO_FIELDS = Object.freeze({});

/** A copy of `value` with every secret member replaced; the value itself when it holds none. */
function redactSecrets<T>(value: T, depth = 0): T {
  if (depth > 4 || value === null || typeof value !== 'object' || Array.isArray(value) || value instanceof Error) return value;
  let copy: Record<string, unknown> | undefined;
  for (const key of Object.keys(value)) {
    const member = (value as Record<string, unknown>)[key];
    const replaced = SECRET_KEYS.has(key) ? REDACTED : redactSecrets(member, depth + 1);
    if (replaced !== member) {
      copy ??= { ...(value as Record<string, unknown>) };
      copy[key] = replaced;
    }
  }
  return (copy ?? value) as T;
}

export interface LoggerSettings {
  /** The process or service name, on every line. */
  name: string;
  level?: string;
  /** Where lines go (default stdout); tests pass a stream to read them back. */
  destination?: DestinationStream;
  /** A file to write lines to instead of stdout. */
  file?: string;
  /** Extra fields on every line (e.g. the replica). */
  base?: Record<string, unknown>;
}

/** The one root logger of a process; subsystems take `logger.child({component})`. */
export function createLogger(settings: LoggerSettings): Logger {
  const options: LoggerOptions = {
    name: settings.name,
    level: settings.level ?? 'info',
    base: { pid: process.pid, ...settings.base },
    // Log objects are scrubbed at any depth; a child logger's bindings pass only through
    // serializers, which see top-level members: one per secret name covers those.
    formatters: { log: (object) => redactSecrets(object) },
    serializers: { err: pino.stdSerializers.err, ...Object.fromEntries([...SECRET_KEYS].map((key) => [key, () => REDACTED])) },
    // A line written within a traced operation names its trace (docs/tracing.md).
    mixin: () => {
      const traceId = activeTraceId();
      return traceId === undefined ? NO_FIELDS : { trace_id: traceId };
    },
    // Pino's own strategy merges into the mixin's object; the shared empty one is left alone.
    mixinMergeStrategy: (mergeObject, mixinObject) => (mixinObject === NO_FIELDS ? mergeObject : Object.assign(mixinObject, mergeObject)),
  };
  if (settings.destination) return pino(options, settings.destination);
  // Off a terminal, lines are written in batches of at least 4 KiB (one write per line would
  // cost a system call per request); pino flushes what is left when the process exits.
  const batched = settings.file !== undefined || !process.stdout.isTTY;
  // A file is opened here, not by sonic-boom later, so lines of a process that exits at once are kept.
  const destination = pino.destination({ dest: settings.file === undefined ? 1 : openSync(settings.file, 'a'), sync: false, minLength: batched ? 4096 : 0 });
  return pino(options, batched ? coalescedPerTurn(destination) : destination);
}

type SonicBoom = ReturnType<typeof pino.destination>;

/** Destinations holding lines of the current event-loop turn, to write out if the process exits. */
const coalescing = new Set<() => void>();

/**
 * Hands the lines of one event-loop turn to sonic-boom as one string. sonic-boom measures the
 * byte length of its whole pending buffer on every write, which under load made each log line
 * cost more than pino's own serialization (docs/benchmarks.md#gateway-baseline).
 */
function coalescedPerTurn(target: SonicBoom): DestinationStream & { flush(callback?: (error?: Error) => void): void } {
  let lines: string[] = [];
  const handOver = () => {
    if (lines.length === 0) return;
    const joined = lines.join('');
    lines = [];
    target.write(joined);
  };
  const onExit = () => {
    handOver();
    try {
      target.flushSync();
    } catch {
      // Exiting anyway: the destination is closed or not yet open.
    }
  };
  if (coalescing.size === 0) process.once('exit', () => coalescing.forEach((flush) => flush()));
  coalescing.add(onExit);
  target.once('close', () => coalescing.delete(onExit));
  return {
    write(line: string) {
      if (lines.push(line) === 1) setImmediate(handOver);
    },
    flush(callback) {
      handOver();
      target.flush(callback);
    },
  };
}

/** A URL safe to log: any password in it replaced. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = 'redacted';
    return parsed.toString();
  } catch {
    return '[unparseable url]';
  }
}
