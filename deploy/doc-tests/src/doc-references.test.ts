// Every doc of the repository names only what exists: the files, code names, settings and links
// it mentions (the rules: references.ts). A doc that names a module, a function or a setting that
// was renamed or removed fails here, with the line to fix.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FOREIGN_NAMES } from './foreign-names.js';
import { docProblems, type CheckContext } from './references.js';
import { readRepository, REPOSITORY_ROOT } from './repository.js';

const repository = readRepository();
const readDoc = (file: string) => readFileSync(path.join(REPOSITORY_ROOT, file), 'utf8');
const context: CheckContext = { repository, foreignNames: FOREIGN_NAMES, readDoc };
const docs = repository.files.filter((file) => file.endsWith('.md'));

describe('doc references — every doc names only what the repository holds', () => {
  it('doc references — the docs are found: docs/*.md and README.md among them', () => {
    expect(docs).toContain('README.md');
    expect(docs).toContain('docs/design.md');
    expect(docs.filter((doc) => doc.startsWith('docs/')).length).toBeGreaterThan(20);
  });

  it.each(docs)('doc references — %s names only files, code, settings and links that exist', (doc) => {
    const problems = docProblems(doc, readDoc(doc), context).map(({ line, message }) => `${doc}:${line} ${message}`);
    expect(problems).toEqual([]);
  });
});
