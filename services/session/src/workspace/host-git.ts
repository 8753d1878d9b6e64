import { spawn } from 'node:child_process';
import { gitAuthorization } from '@svc/service-kit';

/** How long one git command may take (a large clone or push over a slow network). */
const GIT_TIMEOUT_MS = 10 * 60_000;

/**
 * Runs git on the session service's host in `home`, with nothing of the host's git configuration,
 * and the control plane's token for the repository as an `http.extraHeader` for its origin only,
 * given through git's environment (`GIT_CONFIG_*`): never on a command line (`ps` shows those),
 * never in a file. Resolves with its stdout; fails with its own last words, the token taken out.
 */
export function hostGit(home: string, token: string | undefined, repo: URL) {
  const header = token === undefined ? [] : [[`http.${repo.origin}/.extraHeader`, `Authorization: ${gitAuthorization(token)}`]];
  const env: NodeJS.ProcessEnv = {
    PATH: process.env['PATH'],
    HOME: home,
    GIT_TERMINAL_PROMPT: '0',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_COUNT: String(header.length),
    ...Object.fromEntries(
      header.flatMap(([key, value], i) => [
        [`GIT_CONFIG_KEY_${i}`, key],
        [`GIT_CONFIG_VALUE_${i}`, value],
      ]),
    ),
  };
  const scrub = (text: string) => (token === undefined ? text : text.split(token).join('<token>'));
  return (args: readonly string[]) =>
    new Promise<string>((resolve, reject) => {
      const child = spawn('git', args, { cwd: home, env, timeout: GIT_TIMEOUT_MS });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.on('error', (err) => reject(new Error(`git could not run: ${err.message}`)));
      child.on('close', (code) => {
        if (code === 0) return resolve(stdout);
        const command = args[0] === '-C' ? args[2] : args[0];
        reject(new Error(scrub(`git ${command} of ${repo.href} failed (${code}): ${stderr.trim().split('\n').slice(-3).join(' ')}`)));
      });
    });
}
