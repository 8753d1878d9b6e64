import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { demoAgentTemplate } from '@svc/test-support/stand-ins';

const BUILT_IN = fileURLToPath(new URL('../../../services/session/templates/', import.meta.url));

/**
 * Writes `<dir>/demo-once.toml`: the built-in demo, but one prompt and one run (`one_shot`), for
 * tests of a worker that ends by itself (the built-in demo is a conversation: it waits).
 */
export async function writeOneShotDemo(dir: string): Promise<string> {
  const demo = await readFile(path.join(BUILT_IN, 'demo.toml'), 'utf8');
  const once = demo.replace('mode = "conversation"', 'mode = "one_shot"');
  if (once === demo) throw new Error('the built-in demo template is no longer a conversation: this copy is needless');
  await writeFile(path.join(dir, 'demo-once.toml'), once);
  return 'demo-once';
}

/**
 * The demo agent fast (20 ms a step) and unasked (its Glob and Write allowed by its lists), in a
 * conversation with these `[session]` settings: a scripted first turn, then every message a turn
 * of its own.
 */
export function fastDemoConversation(session: { idle_timeout_s?: number; keep_sandbox_s?: number } = {}): string {
  return demoAgentTemplate({ session });
}
