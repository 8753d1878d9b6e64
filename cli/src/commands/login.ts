import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { text } from 'node:stream/consumers';
import { apiPaths, LOCAL_SIGN_IN_CODE_FILE } from '@svc/protocol';
import { ApiError, createApi } from '../api.js';
import { CliError, EXIT } from '../exit-codes.js';
import { printJson } from '../output.js';
import { resolveConnection, saveConfig } from '../settings.js';
import { CONNECTION_HELP, connectionFlags, type Command } from './command.js';

const flags = {
  ...connectionFlags,
  code: { type: 'string', description: "the local stack's sign-in code (default: read from its state directory)" },
  json: { type: 'boolean', default: false },
} as const;

/** The local stack's sign-in code: the flag, else the file in its state directory (`SVC_STATE_DIR`, default `.svc`). */
async function localSignInCode(flag: string | undefined, env: NodeJS.ProcessEnv): Promise<string> {
  if (flag) return flag;
  const file = path.resolve(env['SVC_STATE_DIR'] || '.svc', LOCAL_SIGN_IN_CODE_FILE);
  try {
    return (await readFile(file, 'utf8')).trim();
  } catch {
    throw new CliError(
      `no sign-in code for the local stack: ${file} cannot be read (run svc login where the stack was started, or pass --code from \`npm run up\`'s output); for another gateway use --token`,
      EXIT.usage,
    );
  }
}

/**
 * `svc login`: saves the gateway's URL and a user token. With `--token`, that token (`-` reads
 * it from stdin, so it stays out of the shell's history); without, one from the local stack's
 * built-in issuer, for the stack's sign-in code (the file in its state directory, or `--code`).
 * The token is checked before it is saved, and never printed.
 */
export const loginCommand: Command<typeof flags> = {
  name: 'login',
  summary: 'save a token (from the local stack, or one you paste)',
  help: `  svc login                       a token from the local stack's built-in issuer (its sign-in code
                                  is read from $SVC_STATE_DIR/${LOCAL_SIGN_IN_CODE_FILE}, default .svc)
  svc login --code <code>         the same, with the code \`npm run up\` printed
  svc login --token -             a token from your identity provider, pasted on stdin

Flags
  --code <code>    the local stack's sign-in code
  --json           print {url, config_file, sub} as JSON
${CONNECTION_HELP}

Examples
  $ svc login
  $ pbpaste | svc login --url https://svc.example.com --token -`,
  flags,
  async run(cli) {
    const connection = await resolveConnection({ url: cli.flags.url });
    let token = cli.flags.token === '-' ? (await text(process.stdin)).trim() : cli.flags.token;
    if (token === undefined) {
      try {
        const code = await localSignInCode(cli.flags.code, process.env);
        token = (await createApi(connection).request<{ token: string }>('POST', apiPaths.localToken, { code })).token;
      } catch (err) {
        if (err instanceof ApiError && err.status === 404) {
          throw new CliError(`${connection.url} gives no local tokens (it is not a local stack): log in with --token from your identity provider`);
        }
        if (err instanceof ApiError && err.status === 403) {
          throw new CliError(
            `${connection.url} refused the sign-in code (it is another stack's, or the stack was started elsewhere): pass --code from its output`,
          );
        }
        throw err;
      }
    }
    if (!token) throw new CliError('the token is empty', EXIT.usage);
    // A token the gateway refuses is not worth saving.
    await createApi({ url: connection.url, token }).request('GET', apiPaths.sessions({ limit: 1 }));
    const file = await saveConfig({ url: connection.url, token });
    const sub = subjectOf(token);
    if (cli.flags.json) printJson({ url: connection.url, config_file: file, sub });
    else process.stdout.write(`logged in to ${connection.url}${sub ? ` as ${sub}` : ''}; saved in ${file}\n`);
    return EXIT.ok;
  },
};

/** The `sub` of a JWT, for the message (not verified here: the gateway just accepted it). */
function subjectOf(token: string): string | undefined {
  try {
    return (JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { sub?: string }).sub;
  } catch {
    return undefined;
  }
}
