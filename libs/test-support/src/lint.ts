import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';

const WORKSPACE_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

let graphReady: Promise<unknown> | undefined;

/**
 * Lints `source` as if it were the file at `relativePath` in the workspace, with the workspace's
 * own ESLint config, and returns the rule ids that fired. The module-boundary rule reads Nx's
 * project graph, so it is computed first.
 */
export async function lintAsIf(relativePath: string, source: string): Promise<string[]> {
  graphReady ??= import('@nx/devkit').then(({ createProjectGraphAsync }) => createProjectGraphAsync({ exitOnError: false }));
  await graphReady;
  const eslint = new ESLint({ cwd: WORKSPACE_ROOT });
  const [result] = await eslint.lintText(source, { filePath: path.join(WORKSPACE_ROOT, relativePath) });
  return (result?.messages ?? []).map((message) => message.ruleId ?? message.message);
}
