import type WebSocket from 'ws';
import { apiPaths, TERMINAL_CLOSE } from '@svc/protocol';
import type { Api } from '../api.js';
import { CliError } from '../exit-codes.js';
import { visibleText } from './visible-text.js';

/** Why a terminal closed, as its close code says. */
function closedBecause(code: number, reason: string): string | undefined {
  if (code === 1000 || code === TERMINAL_CLOSE.shellEnded) return undefined;
  let said = reason;
  try {
    said = (JSON.parse(reason) as { reason?: string }).reason ?? reason;
  } catch {
    // A plain reason.
  }
  return `the terminal closed (${code}): ${visibleText(said) || 'the connection was lost'}`;
}

/**
 * `svc attach --raw`: a shell in the worker's sandbox (docs/cli.md). This terminal is put in raw
 * mode and its bytes pass both ways as they are, until the shell exits (`exit`, ctrl+d) or the
 * connection goes; then the terminal is put back as it was. Ctrl+c goes to the shell.
 */
export async function rawTerminal(api: Api, workerId: string, io: { stdin: NodeJS.ReadStream; stdout: NodeJS.WriteStream } = process): Promise<void> {
  const size = { cols: io.stdout.columns || 80, rows: io.stdout.rows || 24 };
  const socket: WebSocket = api.socket(apiPaths.terminal(workerId, size));
  const wasRaw = io.stdin.isTTY ? io.stdin.isRaw : false;
  const input = (chunk: Buffer) => socket.readyState === socket.OPEN && socket.send(chunk, { binary: true });
  try {
    await new Promise<void>((resolve, reject) => {
      socket.on('unexpected-response', (_request, response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          let message = `${response.statusCode}`;
          try {
            const error = JSON.parse(body) as { code: string; message: string };
            message = `${error.message} (${error.code})`;
          } catch {
            // Not an APIError.
          }
          reject(new CliError(`the terminal was refused: ${visibleText(message)}`));
        });
      });
      socket.on('open', () => {
        if (io.stdin.isTTY) io.stdin.setRawMode(true);
        io.stdin.on('data', input);
        io.stdin.resume();
      });
      socket.on('message', (data: Buffer) => io.stdout.write(data));
      socket.on('close', (code: number, reason: Buffer) => {
        const why = closedBecause(code, reason.toString());
        if (why) reject(new CliError(why));
        else resolve();
      });
      socket.on('error', (err) => reject(new CliError(`the terminal could not connect: ${err.message}`)));
    });
  } finally {
    io.stdin.off('data', input);
    if (io.stdin.isTTY) io.stdin.setRawMode(wasRaw);
    io.stdin.pause();
  }
}
