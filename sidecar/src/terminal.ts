import { spawn } from 'node:child_process';
import { apiPaths, TERMINAL_CLOSE } from '@svc/protocol';
import type { ControlPlaneClient } from './http-client.js';

/** The shell a terminal runs: bash where there is one, else sh. */
const SHELL = 'if command -v bash >/dev/null 2>&1; then exec bash -i; else exec sh -i; fi';

/**
 * A person's terminal in the sandbox (docs/workspace.md, "The terminal"): a WebSocket opened
 * outward to the control plane (the sandbox only connects out), and a shell on a pseudo-terminal
 * made by util-linux's `script` (no native module: the sidecar is one file), sized as the
 * person's terminal was when it opened, in the workspace. Bytes pass both ways as they are; the
 * shell ending closes the socket, the socket closing ends the shell.
 */
export function openTerminal(options: {
  client: ControlPlaneClient;
  workerId: string;
  terminalId: string;
  cols: number;
  rows: number;
  cwd: string;
  env: NodeJS.ProcessEnv;
  warn(message: string): void;
}): void {
  const socket = options.client.webSocket(apiPaths.sandboxTerminal(options.workerId, options.terminalId));
  let shell: ReturnType<typeof spawn> | undefined;
  socket.on('open', () => {
    const command = `stty rows ${options.rows} cols ${options.cols} 2>/dev/null; ${SHELL}`;
    shell = spawn('script', ['-q', '-f', '-e', '-c', command, '/dev/null'], {
      cwd: options.cwd,
      env: { ...options.env, TERM: 'xterm-256color', SHELL: '/bin/sh' },
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    const send = (chunk: Buffer) => socket.readyState === socket.OPEN && socket.send(chunk, { binary: true });
    shell.stdout!.on('data', send);
    shell.stderr!.on('data', send);
    shell.stdin!.on('error', () => undefined);
    shell.on('error', (err) => {
      options.warn(`terminal ${options.terminalId}: the shell could not start (${err.message})`);
      socket.close(TERMINAL_CLOSE.shellEnded, 'the shell could not start');
    });
    shell.on('exit', (code) => {
      shell = undefined;
      if (socket.readyState === socket.OPEN) socket.close(TERMINAL_CLOSE.shellEnded, `the shell exited (${code ?? 'signal'})`);
    });
  });
  socket.on('message', (data: Buffer) => shell?.stdin!.write(data));
  socket.on('close', () => {
    // The whole group: the shell and whatever it started.
    if (shell?.pid !== undefined) {
      try {
        process.kill(-shell.pid, 'SIGHUP');
      } catch {
        // Gone already.
      }
    }
  });
  socket.on('error', (err) => options.warn(`terminal ${options.terminalId}: ${err.message}`));
}
