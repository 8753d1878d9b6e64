import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CliError, EXIT } from '../exit-codes.js';
import type { Command } from './command.js';

/**
 * The local stack's launcher in the checkout this `svc` is part of (`npm run up` builds it),
 * looked for upwards: `svc` runs as the bundle (cli/dist/svc.mjs) or as tsc's output
 * (cli/dist/commands/up.js).
 */
function checkoutLocalStack(): string | undefined {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let depth = 0; depth < 6; depth++, dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'deploy/local-stack/dist/main.js');
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

/**
 * `svc up`: the whole control plane on this machine (nats-server, the embedded store, every
 * service, a demo session), in the foreground until ctrl+c. It runs the local stack's launcher
 * (`SVC_LOCAL_STACK` names it elsewhere); settings are its `SVC_*` variables.
 */
export const upCommand: Command<Record<string, never>> = {
  name: 'up',
  summary: 'start the local stack (everything on this machine, with a demo)',
  help: `  svc up

Settings are the local stack's SVC_* variables (docs/configuration.md), e.g. SVC_STATE_DIR, SVC_GATEWAY_PORT.

Examples
  $ svc up
  $ SVC_GATEWAY_PORT=9090 svc up`,
  flags: {},
  async run() {
    const launcher = process.env['SVC_LOCAL_STACK'] || checkoutLocalStack();
    if (!launcher || !existsSync(launcher))
      throw new CliError(
        `the local stack is not built (${launcher ?? 'deploy/local-stack/dist/main.js'} is missing): run \`npm run build\` in the repository, or set SVC_LOCAL_STACK`,
        EXIT.failed,
      );
    const child = spawn(process.execPath, [launcher], { stdio: 'inherit' });
    // ctrl+c reaches the child through the terminal; a SIGTERM to svc is passed on.
    process.on('SIGTERM', () => child.kill('SIGTERM'));
    process.on('SIGINT', () => {});
    return new Promise((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1))));
  },
};
