import type { ChildProcess } from 'node:child_process';

/**
 * Resolves once the child writes `marker` to its standard error (a server saying it is up);
 * rejects with what it wrote when it exits first or `timeoutMs` passes. Keeps reading after,
 * so a full pipe never blocks the child.
 */
export function waitForStderr(child: ChildProcess, marker: string, what: string, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let log = '';
    const timer = setTimeout(() => reject(new Error(`${what} did not start within ${timeoutMs / 1000} s: ${log.trim()}`)), timeoutMs);
    child.stderr!.on('data', (chunk: Buffer) => {
      log = (log + chunk.toString()).slice(-8192);
      if (log.includes(marker)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited with code ${code}: ${log.trim()}`));
    });
  });
}
