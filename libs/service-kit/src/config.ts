/**
 * Typed configuration read once from `SVC_*` environment variables. Every problem is collected
 * and reported together, each naming its variable, so a misconfigured process says all that is
 * wrong in one start.
 */

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
}

type Env = Record<string, string | undefined>;

/** One setting: where it comes from and how to read it. */
export interface Setting<T> {
  readonly variable: string;
  read(raw: string | undefined): { value: T } | { problem: string };
}

interface Options<T> {
  /** Used when the variable is unset or empty. Without a default the variable is required. */
  default?: T;
  /** A sentence for the "required" message, e.g. "the NATS server URL". */
  description?: string;
}

function missing(variable: string, description: string | undefined): { problem: string } {
  return { problem: `${variable} is required${description ? ` (${description})` : ''}` };
}

/** A string setting. */
export function stringSetting(variable: string, options: Options<string> & { pattern?: RegExp } = {}): Setting<string> {
  return {
    variable,
    read(raw) {
      if (raw === undefined || raw === '') return options.default !== undefined ? { value: options.default } : missing(variable, options.description);
      if (options.pattern && !options.pattern.test(raw)) return { problem: `${variable} must match ${options.pattern}` };
      return { value: raw };
    },
  };
}

/** An optional string setting: `undefined` when unset. */
export function optionalStringSetting(variable: string): Setting<string | undefined> {
  return { variable, read: (raw) => ({ value: raw === '' ? undefined : raw }) };
}

/** An integer setting within bounds. */
export function integerSetting(variable: string, options: Options<number> & { min?: number; max?: number } = {}): Setting<number> {
  const min = options.min ?? Number.MIN_SAFE_INTEGER;
  const max = options.max ?? Number.MAX_SAFE_INTEGER;
  return {
    variable,
    read(raw) {
      if (raw === undefined || raw === '') return options.default !== undefined ? { value: options.default } : missing(variable, options.description);
      const value = Number(raw);
      if (!/^-?\d+$/.test(raw.trim()) || !Number.isSafeInteger(value) || value < min || value > max) {
        return { problem: `${variable} must be an integer from ${min} to ${max}, got "${raw}"` };
      }
      return { value };
    },
  };
}

/** A boolean setting: true/false, 1/0, yes/no. */
export function booleanSetting(variable: string, options: Options<boolean> = {}): Setting<boolean> {
  return {
    variable,
    read(raw) {
      if (raw === undefined || raw === '') return options.default !== undefined ? { value: options.default } : missing(variable, options.description);
      const normalized = raw.trim().toLowerCase();
      if (['true', '1', 'yes'].includes(normalized)) return { value: true };
      if (['false', '0', 'no'].includes(normalized)) return { value: false };
      return { problem: `${variable} must be true or false, got "${raw}"` };
    },
  };
}

/** One of a fixed set of values. */
export function choiceSetting<const T extends string>(variable: string, choices: readonly T[], options: Options<T> = {}): Setting<T> {
  return {
    variable,
    read(raw) {
      if (raw === undefined || raw === '') return options.default !== undefined ? { value: options.default } : missing(variable, options.description);
      if (!(choices as readonly string[]).includes(raw)) return { problem: `${variable} must be one of ${choices.join(', ')}, got "${raw}"` };
      return { value: raw as T };
    },
  };
}

/** A comma-separated list (empty items dropped). */
export function listSetting(variable: string, options: Options<string[]> = {}): Setting<string[]> {
  return {
    variable,
    read(raw) {
      if (raw === undefined || raw.trim() === '') return options.default !== undefined ? { value: options.default } : missing(variable, options.description);
      return {
        value: raw
          .split(',')
          .map((item) => item.trim())
          .filter((item) => item !== ''),
      };
    },
  };
}

export type ConfigOf<S extends Record<string, Setting<unknown>>> = { [K in keyof S]: S[K] extends Setting<infer T> ? T : never };

/** Reads every setting from `env`; throws one `ConfigError` naming every bad or missing variable. */
export function readConfig<S extends Record<string, Setting<unknown>>>(settings: S, env: Env = process.env): ConfigOf<S> {
  const problems: string[] = [];
  const config: Record<string, unknown> = {};
  for (const [key, setting] of Object.entries(settings)) {
    const result = setting.read(env[setting.variable]);
    if ('problem' in result) problems.push(result.problem);
    else config[key] = result.value;
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return config as ConfigOf<S>;
}

/**
 * A setting's JSON object (`SVC_GIT_CREDENTIALS`, `SVC_GROUP_MEMBERS`, …): undefined when unset
 * or blank; else the object, or an Error naming the variable and what it should look like
 * (`example`), never echoing the value (it may hold a secret).
 */
export function jsonObjectSetting(variable: string, raw: string | undefined, example: string): Record<string, unknown> | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new Error(`${variable} must be a JSON object, e.g. ${example}: it is not JSON`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error(`${variable} must be a JSON object, e.g. ${example}`);
  return parsed as Record<string, unknown>;
}
