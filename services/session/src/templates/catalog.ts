import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CodedError } from '@svc/protocol';
import { parseTemplate, type Template } from './template.js';

/** The templates shipped with svc (`demo`, `claude`, `codex`, `codex-auto`), beside `src/` and `dist/`. */
export const BUILT_IN_TEMPLATES_DIR = fileURLToPath(new URL('../../templates/', import.meta.url));

export interface TemplateCatalog {
  /** The template named `name`: from the configured directory first, else a built-in one. */
  load(name: string): Promise<Template>;
}

/**
 * Templates are read when a session is asked for, not at start: an edited file applies to the
 * next session without a restart, and a broken file fails only the sessions that use it.
 */
export function createTemplateCatalog(options: { dir?: string | undefined }): TemplateCatalog {
  const dirs = [...(options.dir ? [path.resolve(options.dir)] : []), BUILT_IN_TEMPLATES_DIR];
  return {
    async load(name) {
      // The name is checked by the API's schema too; a path separator here would leave the directory.
      if (!/^[a-z0-9][a-z0-9_-]{0,63}$/.test(name)) throw new CodedError('template_not_found', `template "${name}" does not exist`);
      for (const dir of dirs) {
        const file = path.join(dir, `${name}.toml`);
        let text: string;
        try {
          text = await readFile(file, 'utf8');
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
          throw new CodedError('invalid_template', `template file ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
        }
        return parseTemplate(name, text, file);
      }
      throw new CodedError('template_not_found', `template "${name}" does not exist (looked in ${dirs.join(', ')})`);
    },
  };
}
