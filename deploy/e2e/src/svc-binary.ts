import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/** The built `svc`, one bundled file (`nx run @svc/cli:build`). */
export const SVC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../cli/dist/svc.mjs');
const run = promisify(execFile);

/** What a run of `svc` answered: its exit code and output. */
export interface SvcRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the built `svc` with `args` in `env()` (read at each run), as a script would; a failing exit is an answer, not a throw. */
export function svcIn(env: () => Record<string, string>): (...args: string[]) => Promise<SvcRun> {
  return async (...args) => {
    try {
      const { stdout, stderr } = await run(process.execPath, [SVC, ...args], { env: { ...process.env, ...env() }, encoding: 'utf8' });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const failed = err as SvcRun;
      return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
    }
  };
}
