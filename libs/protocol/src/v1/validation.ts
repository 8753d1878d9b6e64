import { Compile, type Validator } from 'typebox/compile';
import type { TSchema } from 'typebox';
import { EVENT_DATA_SCHEMAS, EVENT_TYPES, type EventType } from './events.js';
import { IncomingEnvelopeSchema, type IncomingEvent } from './envelope.js';

/** One failing field: a JSON pointer into the checked value, and what is wrong with it. */
export interface FieldError {
  field: string;
  message: string;
}

export type ValidationResult<T> = { ok: true; value: T } | { ok: false; errors: FieldError[] };

/** A validation error as TypeBox and Ajv report it. */
export interface RawError {
  keyword: string;
  instancePath: string;
  message?: string | undefined;
  params: Record<string, unknown>;
}

/** The names a "required" or "additionalProperties" error is about (TypeBox lists them, Ajv names one). */
function namesIn(params: Record<string, unknown>, list: string, single: string): string[] {
  if (Array.isArray(params[list])) return params[list] as string[];
  return typeof params[single] === 'string' ? [params[single] as string] : [];
}

/**
 * Turns TypeBox or Ajv validation errors into field errors, naming missing and unexpected
 * members by their JSON pointer under `prefix`.
 */
export function toFieldErrors(errors: readonly RawError[], prefix: string): FieldError[] {
  const fieldErrors: FieldError[] = [];
  for (const error of errors) {
    if (error.keyword === 'required') {
      for (const name of namesIn(error.params, 'requiredProperties', 'missingProperty')) {
        fieldErrors.push({ field: `${prefix}${error.instancePath}/${name}`, message: 'is required' });
      }
    } else if (error.keyword === 'additionalProperties') {
      for (const name of namesIn(error.params, 'additionalProperties', 'additionalProperty')) {
        fieldErrors.push({ field: `${prefix}${error.instancePath}/${name}`, message: 'is not allowed' });
      }
    } else if (error.keyword === 'boolean' && error.message === 'schema is false') {
      // The "additionalProperties" error above already names this member.
      continue;
    } else if (error.keyword === 'enum' && Array.isArray(error.params['allowedValues'])) {
      // Name the choices: "must be one of "anthropic", "openai"" says what to write instead.
      fieldErrors.push({
        field: `${prefix}${error.instancePath}`,
        message: `must be one of ${(error.params['allowedValues'] as unknown[]).map((value) => JSON.stringify(value)).join(', ')}`,
      });
    } else if (error.keyword === 'anyOf' || error.keyword === 'oneOf') {
      fieldErrors.push({ field: `${prefix}${error.instancePath}`, message: 'does not match any allowed value' });
    } else {
      fieldErrors.push({ field: `${prefix}${error.instancePath}`, message: error.message ?? `fails ${error.keyword}` });
    }
  }
  // A union reports each branch's failure too; one line per field and message is enough.
  const seen = new Set<string>();
  return fieldErrors.filter((e) => {
    const key = `${e.field}\u0000${e.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** A compiled validator that reports failing fields under `prefix` (e.g. "/events/3"). */
export interface SchemaChecker<T> {
  check(value: unknown, prefix?: string): ValidationResult<T>;
}

/**
 * A checker with field-naming errors. The schema is compiled once, on the first check: a
 * process that never validates a kind of message (a CLI, a sidecar) does not pay to compile it
 * at start.
 */
export function createChecker<T>(schema: TSchema): SchemaChecker<T> {
  let compiled: Validator | undefined;
  return {
    check(value, prefix = '') {
      const validator = (compiled ??= Compile(schema));
      if (validator.Check(value)) return { ok: true, value: value as T };
      return { ok: false, errors: toFieldErrors(validator.Errors(value) as unknown as RawError[], prefix) };
    },
  };
}

const envelopeChecker = createChecker<{ type: EventType }>(IncomingEnvelopeSchema);
const dataCheckers = Object.fromEntries(EVENT_TYPES.map((type) => [type, createChecker(EVENT_DATA_SCHEMAS[type])])) as Record<
  EventType,
  SchemaChecker<unknown>
>;

/**
 * Validates an incoming event: the envelope first, then `data` against its type's schema,
 * so a message names the exact field (e.g. "/data/tool_name is required").
 */
export function validateIncomingEvent(value: unknown, prefix = ''): ValidationResult<IncomingEvent> {
  const envelope = envelopeChecker.check(value, prefix);
  if (!envelope.ok) {
    const typeIsKnown = typeof value === 'object' && value !== null && EVENT_TYPES.includes((value as { type?: unknown }).type as EventType);
    if (!typeIsKnown) return envelope;
    const dataResult = dataCheckers[(value as { type: EventType }).type].check((value as { data?: unknown }).data, `${prefix}/data`);
    // Report envelope problems and, when data is present, its field problems in one answer.
    const dataErrors = dataResult.ok || (value as { data?: unknown }).data === undefined ? [] : dataResult.errors;
    return { ok: false, errors: [...envelope.errors.filter((e) => !e.field.startsWith(`${prefix}/data`)), ...dataErrors] };
  }
  const data = dataCheckers[envelope.value.type].check((value as { data: unknown }).data, `${prefix}/data`);
  if (!data.ok) return data;
  return { ok: true, value: value as IncomingEvent };
}

/** Formats field errors as one line, e.g. "/data/name is required; /ts must match format". */
export function describeFieldErrors(errors: readonly FieldError[]): string {
  return errors.map((e) => `${e.field || '(body)'} ${e.message}`).join('; ');
}
