import { readdirSync, readFileSync } from 'node:fs';

/**
 * The environment (one variable a line) of every process on this machine that has `marker` in
 * it: e.g. `SVC_SIDECAR_CONFIG=`, which every process of a sandbox inherits from its sidecar.
 */
export function processesWithEnv(marker: string): string[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map((pid) => {
      try {
        return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').join('\n');
      } catch {
        return '';
      }
    })
    .filter((environ) => environ.includes(marker));
}
