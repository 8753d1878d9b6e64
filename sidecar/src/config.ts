import { readFile } from 'node:fs/promises';
import Value from 'typebox/value';
import { createChecker, describeFieldErrors, SidecarConfigSchema, type SidecarConfig } from '@svc/protocol';

/** A config that cannot be used; the message names the file and every bad field (never a token). */
export class SidecarConfigError extends Error {
  override readonly name = 'SidecarConfigError';
}

/** The config with the worker token resolved (from `auth_token` or `auth_token_file`). */
export type LoadedSidecarConfig = SidecarConfig & { token: string; /** Where the config was read from. */ source: string };

const checker = createChecker<SidecarConfig>(SidecarConfigSchema);

/** Validates a parsed config and fills in its defaults; `source` names it in errors. */
export async function parseSidecarConfig(raw: unknown, source: string): Promise<LoadedSidecarConfig> {
  const withDefaults = Value.Default(SidecarConfigSchema, structuredClone(raw));
  const checked = checker.check(withDefaults);
  if (!checked.ok) throw new SidecarConfigError(`${source}: ${describeFieldErrors(checked.errors)}`);
  const config = checked.value;
  // The file wins when both are given: it is where the credential proxy step keeps the token current.
  if (config.auth_token_file === undefined && config.auth_token !== undefined) return { ...config, token: config.auth_token, source };
  if (config.auth_token_file === undefined) throw new SidecarConfigError(`${source}: /auth_token or /auth_token_file is required (the worker token)`);
  let token: string;
  try {
    token = (await readFile(config.auth_token_file, 'utf8')).trim();
  } catch (err) {
    throw new SidecarConfigError(`${source}: /auth_token_file ${config.auth_token_file} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if (token === '') throw new SidecarConfigError(`${source}: /auth_token_file ${config.auth_token_file} is empty`);
  return { ...config, token, source };
}

/** Reads the JSON file named by `SVC_SIDECAR_CONFIG`. */
export async function loadSidecarConfig(env: Record<string, string | undefined> = process.env): Promise<LoadedSidecarConfig> {
  const file = env['SVC_SIDECAR_CONFIG'];
  if (!file) throw new SidecarConfigError("SVC_SIDECAR_CONFIG is not set: it names the sidecar's JSON config file");
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new SidecarConfigError(`${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new SidecarConfigError(`${file} is not JSON: ${(err as Error).message}`);
  }
  return parseSidecarConfig(raw, file);
}

/** What the sidecar may log about its config: everything but the token. */
export function describeConfig(config: LoadedSidecarConfig): Record<string, unknown> {
  const { token: _token, auth_token: _inline, ...shown } = config;
  return { ...shown, agent: { ...shown.agent, env: Object.keys(shown.agent.env) } };
}
