import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CodedError, type TemplateSummary } from '@svc/protocol';
import type { GroupMembers } from './approval-routes.js';
import { parseTemplate, type Template } from './template.js';

/** The templates shipped with svc (`demo`, `claude`, `codex`, `codex-auto`, `gemini`, …), beside `src/` and `dist/`. */
export const BUILT_IN_TEMPLATES_DIR = fileURLToPath(new URL('../../templates/', import.meta.url));

export interface TemplateCatalog {
  /** The template named `name`: from the configured directory first, else a built-in one. */
  load(name: string): Promise<Template>;
  /** Every template a session can name, by name (the configured directory's shadow built-in ones); a broken file is listed with its problem. */
  list(): Promise<TemplateSummary[]>;
}

const TEMPLATE_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/**
 * Templates are read when a session is asked for, not at start: an edited file applies to the
 * next session without a restart, and a broken file fails only the sessions that use it.
 */
export function createTemplateCatalog(options: { dir?: string | undefined; groups?: GroupMembers }): TemplateCatalog {
  const dirs = [...(options.dir ? [path.resolve(options.dir)] : []), BUILT_IN_TEMPLATES_DIR];
  const load = async (name: string): Promise<Template> => {
    // The name is checked by the API's schema too; a path separator here would leave the directory.
    if (!TEMPLATE_NAME.test(name)) throw new CodedError('template_not_found', `template "${name}" does not exist`);
    for (const dir of dirs) {
      const file = path.join(dir, `${name}.toml`);
      let text: string;
      try {
        text = await readFile(file, 'utf8');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw new CodedError('invalid_template', `template file ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
      }
      return parseTemplate(name, text, file, options.groups);
    }
    throw new CodedError('template_not_found', `template "${name}" does not exist (looked in ${dirs.join(', ')})`);
  };
  return {
    load,
    async list() {
      const names = new Set<string>();
      for (const dir of dirs) {
        const files = await readdir(dir).catch((err: NodeJS.ErrnoException) => {
          if (err.code === 'ENOENT') return [];
          throw err;
        });
        for (const file of files) if (file.endsWith('.toml') && TEMPLATE_NAME.test(file.slice(0, -5))) names.add(file.slice(0, -5));
      }
      const summaries = await Promise.all(
        [...names].sort().map(async (name): Promise<TemplateSummary> => {
          try {
            const template = await load(name);
            return {
              name,
              description: template.description,
              ...(template.agent.prompt === undefined ? {} : { prompt: template.agent.prompt }),
              ...(template.sidecar ? { adapter: template.sidecar.adapter } : {}),
              autonomous: template.sidecar?.autonomous ?? false,
            };
          } catch (err) {
            return { name, description: '', autonomous: false, problem: (err as Error).message };
          }
        }),
      );
      return summaries;
    },
  };
}
