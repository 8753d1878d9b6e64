/**
 * A value as JSON text Postgres takes as `jsonb`, and the value that text now holds. Postgres
 * refuses `\u0000` and a lone surrogate (`\ud800`) in a jsonb string, and with it the whole
 * statement: one such character in one event would stop every append of the batch it came in,
 * again at each retry. `JSON.stringify` writes both as escapes (a lone surrogate as `\udXXX`,
 * since ES2019), so each such escape — one not itself escaped, after an even run of
 * backslashes — becomes U+FFFD, the replacement character. `value` is the same object when
 * nothing was replaced.
 */
export function toJsonb<T>(value: T): { text: string; value: T } {
  const json = JSON.stringify(value);
  const text = json.replace(/(?<!\\)((?:\\\\)*)\\u(?:0000|d[89a-f][0-9a-f]{2})/g, '$1\\ufffd');
  return { text, value: text === json ? value : (JSON.parse(text) as T) };
}

/** The JSON text alone (`toJsonb`). */
export const jsonb = (value: unknown): string => toJsonb(value).text;
