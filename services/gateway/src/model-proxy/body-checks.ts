import type { PolicyRefusal } from './request-policy.js';

/** What every body policy's walk shares (body-policy.ts, gemini-body-policy.ts): the refusal it throws and the readers it checks with. */

export type Json = Record<string, unknown>;
export const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A body the proxy refused, and the field that made it refuse. */
export interface BodyRefusal extends PolicyRefusal {
  field: string;
}

/** The most of an agent's value quoted back in a refusal. */
const QUOTED_CHARS = 80;
export const quote = (value: unknown) => {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  return JSON.stringify(text.length > QUOTED_CHARS ? `${text.slice(0, QUOTED_CHARS)}…` : text);
};

/** Thrown inside the walk, caught at its top: the first field that is not passed. */
export class Refused extends Error {
  constructor(
    readonly field: string,
    readonly reason: string,
    readonly kind: PolicyRefusal['kind'] = 'not_allowed',
  ) {
    super(reason);
  }
}
export const refuse = (field: string, why: string): never => {
  throw new Refused(field, `${field} ${why}`);
};

export const WHY_REMOTE = 'the provider would fetch it';
export const WHY_STORED = "it reads what is stored under the control plane's key, whichever worker stored it";
export const WHY_SERVER_TOOL =
  "a tool the provider runs reaches outside the sandbox or into what the key stored (web search and fetch, code execution, MCP servers, files); only the agent's own tools are passed";

export const arrayAt = (value: unknown, field: string): unknown[] => (Array.isArray(value) ? value : refuse(field, 'is not a list'));
export const objectAt = (value: unknown, field: string): Json => (isObject(value) ? value : refuse(field, 'is not an object'));

/** Checks `type` against a list, naming what passes. */
export function typeOf(block: Json, field: string, passed: ReadonlySet<string>, why = 'is not passed'): string {
  const type = block['type'];
  if (typeof type === 'string' && passed.has(type)) return type;
  return refuse(`${field}.type`, `${quote(type)} ${why} (passed: ${[...passed].join(', ')})`);
}

/** One route's body policy: its fields, the fields refused with the reason, and the walk of what they hold (returning the body to forward). */
export interface BodyPolicy {
  fields: ReadonlySet<string>;
  refused: Readonly<Record<string, string>>;
  check(body: Json): Json;
}
