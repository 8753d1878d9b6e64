import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';

export type { Logger } from 'pino';

/**
 * Paths whose values are secrets. pino replaces them with "[redacted]" wherever a log call
 * passes them, so a token reaches no log line even by mistake.
 */
export const REDACTED_PATHS = [
  'token',
  'auth_token',
  'authToken',
  'password',
  'secret',
  'authorization',
  'cookie',
  '*.token',
  '*.auth_token',
  '*.authToken',
  '*.password',
  '*.secret',
  '*.authorization',
  '*.cookie',
  'headers.authorization',
  'headers.cookie',
  'req.headers.authorization',
  'req.headers.cookie',
  '*.headers.authorization',
  '*.headers["x-api-key"]',
];

export interface LoggerSettings {
  /** The process or service name, on every line. */
  name: string;
  level?: string;
  /** Where lines go (default stdout); tests pass a stream to read them back. */
  destination?: DestinationStream;
  /** Extra fields on every line (e.g. the replica). */
  base?: Record<string, unknown>;
}

/** The one root logger of a process; subsystems take `logger.child({component})`. */
export function createLogger(settings: LoggerSettings): Logger {
  const options: LoggerOptions = {
    name: settings.name,
    level: settings.level ?? 'info',
    base: { pid: process.pid, ...settings.base },
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
    serializers: { err: pino.stdSerializers.err },
  };
  return settings.destination ? pino(options, settings.destination) : pino(options);
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
