import { existsSync } from 'node:fs';

/** util-linux's setpriv, which asks the kernel for a signal to the child when its parent dies. */
const SETPRIV = '/usr/bin/setpriv';

/**
 * The command line that runs `command` so that it is killed (SIGKILL) when the process that
 * spawned it dies, however it dies: an exit handler cannot run after a SIGKILL, or when a test
 * runner kills a worker that timed out, and a server left behind holds its port and directory.
 * The kernel's parent-death signal does (`setpriv --pdeathsig`); without setpriv, the command
 * as it is. Spawn it from the main thread: the signal follows the thread that forked.
 */
export function dieWithParent(command: string, args: readonly string[]): { command: string; args: string[] } {
  if (process.platform !== 'linux' || !existsSync(SETPRIV)) return { command, args: [...args] };
  return { command: SETPRIV, args: ['--pdeathsig', 'KILL', '--', command, ...args] };
}
