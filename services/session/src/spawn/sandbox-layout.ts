import type { Sandbox } from '../sandbox/provider.js';

/** The spec's paths inside every sandbox (step 6 and step 6.5). */
export const SANDBOX_PATHS = {
  sidecarBinary: '/usr/local/bin/svc-sidecar',
  sidecarConfig: '/etc/svc/sidecar.json',
  token: '/var/run/svc/token',
  sidecarState: '/var/lib/svc-sidecar',
  workspace: '/workspace',
  /**
   * The agent's home: its own settings and records (Claude Code's `~/.claude`, Codex's
   * `~/.codex`, a shell's history, `git config --global`) kept out of the workspace, which may be
   * a repository whose changes are reported and pushed (docs/workspace.md).
   */
  home: '/home/agent',
} as const;

/** The architecture every sandbox runs (step 6.5.1 selects the sidecar binary built for it). */
export const SANDBOX_TARGET = 'linux/amd64';

/** The environment every sandboxed program starts from (nothing of the session service's own); the home as the sandbox's programs see it. */
export function baseEnv(box: Pick<Sandbox, 'resolvePath'>, sandboxPath: string, extra: Record<string, string>): Record<string, string> {
  return { PATH: sandboxPath, HOME: box.resolvePath(SANDBOX_PATHS.home), LANG: 'C.UTF-8', ...extra };
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
