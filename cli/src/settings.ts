import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import { CliError, EXIT } from './exit-codes.js';

/** Where svc keeps what `svc login` saved: `$SVC_CONFIG`, else `$XDG_CONFIG_HOME/svc/config.json`, else `~/.config/svc/config.json`. */
function configFilePath(env: NodeJS.ProcessEnv = process.env): string {
  if (env['SVC_CONFIG']) return env['SVC_CONFIG'];
  const base = env['XDG_CONFIG_HOME'] || path.join(homedir(), '.config');
  return path.join(base, 'svc', 'config.json');
}

export interface SavedConfig {
  url?: string;
  token?: string;
}

async function readSavedConfig(env: NodeJS.ProcessEnv = process.env): Promise<SavedConfig> {
  const file = configFilePath(env);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return {};
  }
  try {
    const parsed = JSON.parse(text) as SavedConfig;
    return { ...(typeof parsed.url === 'string' ? { url: parsed.url } : {}), ...(typeof parsed.token === 'string' ? { token: parsed.token } : {}) };
  } catch {
    throw new CliError(`${file} is not valid JSON; fix it or run \`svc login\` again`);
  }
}

/** Saves the gateway URL and token, readable by this user only (the token is a credential). */
export async function saveConfig(config: SavedConfig, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const file = configFilePath(env);
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  await writeFile(file, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  await chmod(file, 0o600);
  return file;
}

const DEFAULT_URL = 'http://127.0.0.1:8080';

export interface Connection {
  url: string;
  token: string | undefined;
}

/** The gateway and token: flags first, then `SVC_URL`/`SVC_TOKEN`, then the saved config, then the local stack's address. */
export async function resolveConnection(
  flags: { url?: string | undefined; token?: string | undefined },
  env: NodeJS.ProcessEnv = process.env,
): Promise<Connection> {
  const saved = await readSavedConfig(env);
  const url = (flags.url || env['SVC_URL'] || saved.url || DEFAULT_URL).replace(/\/+$/, '');
  if (!/^https?:\/\/\S+$/.test(url)) throw new CliError(`the gateway URL must start with http:// or https://, got "${url}"`, EXIT.usage);
  return { url, token: flags.token || env['SVC_TOKEN'] || saved.token };
}
