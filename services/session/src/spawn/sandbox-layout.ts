import type { Sandbox } from '../sandbox/provider.js';

/** The spec's paths inside every sandbox (step 6 and step 6.5). */
export const SANDBOX_PATHS = {
  sidecarBinary: '/usr/local/bin/svc-sidecar',
  sidecarConfig: '/etc/svc/sidecar.json',
  token: '/var/run/svc/token',
  sidecarState: '/var/lib/svc-sidecar',
  workspace: '/workspace',
} as const;

/** The architecture every sandbox runs (step 6.5.1 selects the sidecar binary built for it). */
export const SANDBOX_TARGET = 'linux/amd64';

/** The environment every sandboxed program starts from (nothing of the session service's own). */
export function baseEnv(sandboxPath: string, extra: Record<string, string>): Record<string, string> {
  return { PATH: sandboxPath, HOME: SANDBOX_PATHS.workspace, LANG: 'C.UTF-8', ...extra };
}

/** An absolute command inside the sandbox's own directories is mapped like every sandbox path. */
export function resolveCommand(box: Sandbox, command: string): string {
  if (!command.startsWith('/')) return command;
  try {
    return box.resolvePath(command);
  } catch {
    return command;
  }
}
