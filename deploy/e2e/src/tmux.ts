import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { waitFor } from '@svc/test-support';

const run = promisify(execFile);

/**
 * A real terminal for the CLI's end-to-end tests: a tmux server of its own (its own socket),
 * one window of a fixed size running a command; the screen is read with `capture-pane` and
 * keys are sent with `send-keys`.
 */
export interface Terminal {
  screen(): Promise<string>;
  /** Waits until the screen shows `text` (or matches it); the error shows the screen. */
  waitForText(text: string | RegExp, timeoutMs?: number): Promise<string>;
  keys(...keys: string[]): Promise<void>;
  /** Whether the command has exited (the pane stays, showing its last screen). */
  exited(): Promise<boolean>;
  close(): Promise<void>;
}

export async function openTerminal(options: {
  name: string;
  command: string[];
  env: Record<string, string>;
  columns?: number;
  rows?: number;
}): Promise<Terminal> {
  const socket = `svc-e2e-${options.name}-${process.pid}`;
  const tmux = (...args: string[]) => run('tmux', ['-L', socket, ...args], { encoding: 'utf8' });
  const environment = Object.entries(options.env).flatMap(([key, value]) => ['-e', `${key}=${value}`]);
  await tmux(
    '-f',
    '/dev/null',
    'new-session',
    '-d',
    '-s',
    'svc',
    '-x',
    String(options.columns ?? 120),
    '-y',
    String(options.rows ?? 40),
    ...environment,
    ...options.command,
  );
  await tmux('set-option', '-t', 'svc', 'remain-on-exit', 'on');
  const screen = async () => (await tmux('capture-pane', '-p', '-t', 'svc')).stdout;
  return {
    screen,
    async waitForText(text, timeoutMs = 20_000) {
      let last = '';
      try {
        return await waitFor(
          `"${String(text)}" on the screen`,
          async () => {
            last = await screen();
            return (typeof text === 'string' ? last.includes(text) : text.test(last)) ? last : undefined;
          },
          timeoutMs,
          100,
        );
      } catch (err) {
        throw new Error(`${(err as Error).message}\n--- the screen ---\n${last}`);
      }
    },
    async keys(...keys) {
      await tmux('send-keys', '-t', 'svc', ...keys);
    },
    async exited() {
      return (await tmux('display-message', '-p', '-t', 'svc', '#{pane_dead}')).stdout.trim() === '1';
    },
    async close() {
      await tmux('kill-server').catch(() => {});
    },
  };
}
