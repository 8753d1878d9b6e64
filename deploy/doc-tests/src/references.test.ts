import { describe, expect, it } from 'vitest';
import { docProblems, expandBraces, looksLikeOurs, namesOf, pathExists, pathsOf, type CheckContext } from './references.js';
import { declaredNames, spelledWords, yamlKeys, type Repository } from './repository.js';

const FILES = ['README.md', 'docs/protocol.md', 'docs/bus.md', 'libs/bus/src/streams.ts', 'services/gateway/src/plugins/errors.ts', '.ci/run'];
const TOP_LEVEL = new Set(['README.md', 'docs', 'libs', 'services', '.ci']);

/** A repository of a few files and names, its docs' text given here. */
function context(docs: Record<string, string> = {}): CheckContext {
  const repository: Repository = {
    files: FILES,
    topLevel: TOP_LEVEL,
    declared: new Set(['ensureStreams', 'EventFollower', 'offer', 'ERROR_CODES', 'existingSecret']),
    spelled: new Set(['SVC_NATS_URL', 'svc_workers', 'outbox.jsonl', 'NO_COLOR']),
  };
  return {
    repository,
    foreignNames: new Map([['acceptForSession', 'Codex app-server']]),
    readDoc: (file) => docs[file] ?? '',
  };
}

const messages = (doc: string, markdown: string, docs?: Record<string, string>) => docProblems(doc, markdown, context(docs)).map((problem) => problem.message);

describe('references — which code spans name a path', () => {
  it('references — a span rooted at a top-level entry, or ending in an extension, is a path', () => {
    expect(pathsOf('libs/bus', TOP_LEVEL)).toEqual([{ pattern: 'libs/bus', rooted: true }]);
    expect(pathsOf('.ci/run', TOP_LEVEL)).toEqual([{ pattern: '.ci/run', rooted: true }]);
    expect(pathsOf('plugins/errors.ts', TOP_LEVEL)).toEqual([{ pattern: 'plugins/errors.ts', rooted: false }]);
    expect(pathsOf('./protocol.md#sources', TOP_LEVEL)).toEqual([{ pattern: 'protocol.md', rooted: false }]);
  });

  it('references — URLs, absolute paths, variables, commands, packages and build outputs are not checked as paths', () => {
    for (const span of [
      '/v1/workers/{id}/control',
      '$SVC_STATE_DIR/pglite',
      'application/json',
      'https://x.dev/a.md',
      'npx vitest run src/a.test.ts',
      '@svc/protocol',
      'cli/dist/svc.mjs',
      'overrides.env',
      '.svc/pglite',
      '<state dir>/audit-key',
    ]) {
      expect(pathsOf(span, TOP_LEVEL), span).toEqual([]);
    }
  });

  it('references — braces give each choice and placeholders match any name', () => {
    expect(expandBraces('services/{gateway,control}/src')).toEqual(['services/gateway/src', 'services/control/src']);
    expect(pathsOf('libs/<lib>/src/streams.ts', TOP_LEVEL)).toEqual([{ pattern: 'libs/*/src/streams.ts', rooted: true }]);
    expect(pathExists({ pattern: 'libs/*/src/streams.ts', rooted: true }, FILES)).toBe(true);
    expect(pathExists({ pattern: 'src/plugins', rooted: false }, FILES)).toBe(true);
    expect(pathExists({ pattern: 'bus', rooted: true }, FILES)).toBe(false);
  });
});

describe('references — which code spans name code', () => {
  it('references — camelCase, PascalCase of two words and SCREAMING_SNAKE constants look like ours', () => {
    for (const name of ['appendMany', 'StoredEvent', 'APIError', 'ERROR_CODES']) expect(looksLikeOurs(name), name).toBe(true);
    for (const name of ['append', 'worker_id', 'Bash', 'JSON', 'SVC_NATS_URL', 'e2e']) expect(looksLikeOurs(name), name).toBe(false);
  });

  it('references — a call or a generic is its name; a chain headed by ours is checked whole', () => {
    expect(namesOf('serveRpc(nc, subject, handler, {checker?, queue?})')).toEqual(['serveRpc']);
    expect(namesOf('ListResponse<Session>')).toEqual(['ListResponse']);
    expect(namesOf('EventFollower.offer')).toEqual(['EventFollower', 'offer']);
    expect(namesOf('nats.permissionViolations()')).toEqual(['permissionViolations']);
    expect(namesOf('JSON.stringify')).toEqual([]);
    expect(namesOf('nats.js')).toEqual([]);
    expect(namesOf('ingest[i].kill()')).toEqual([]);
  });

  it('references — the sources declare functions, types, members, aliases, shorthands and schema titles', () => {
    const source = [
      'export async function createThing() {}',
      'export type ThingType = {};',
      'class Follower {',
      '  private readonly offerOne(event: Event): boolean {',
      '  refills?: number;',
      '}',
      "export { createThing as makeThing } from './thing.js';",
      'return { get, known, checkWorkerToken };',
      "const Schema = Type.Object({}, { title: 'APIError' });",
    ].join('\n');
    expect(declaredNames(source)).toEqual(
      expect.arrayContaining(['createThing', 'ThingType', 'Follower', 'offerOne', 'refills', 'makeThing', 'checkWorkerToken', 'APIError']),
    );
  });

  it("references — the code's settings, environment variables and file names in strings are spelled; YAML keys are read", () => {
    const words = spelledWords("const url = env.SVC_NATS_URL ?? process.env.NO_COLOR; // notes.md\nwrite(join(dir, 'outbox.jsonl'));");
    expect(words).toEqual(expect.arrayContaining(['SVC_NATS_URL', 'NO_COLOR', 'outbox.jsonl']));
    expect(words).not.toContain('notes.md');
    expect(yamlKeys('postgres:\n  existingSecret: ""\n  - name: x\n')).toEqual(['postgres', 'existingSecret', 'name']);
  });
});

describe('references — a doc and what it names', () => {
  it('references — a doc naming only what exists has no problem', () => {
    const markdown = [
      '`libs/bus/src/streams.ts` and `plugins/errors.ts` run `ensureStreams(nc)`; `EventFollower.offer`, `ERROR_CODES`,',
      '`SVC_NATS_URL`, `svc_workers`, `NO_COLOR`, `outbox.jsonl`, `acceptForSession`, `existingSecret`, `append`, `Bash`.',
      '[bus](bus.md), [sources](protocol.md#sources), [here](#a-heading), [up](../README.md), [docs](./), [site](https://example.com/x.md)',
      '## A heading',
      '```sh',
      'node `missingName` missing/file.ts',
      '```',
    ].join('\n');
    expect(messages('docs/bus.md', markdown, { 'docs/protocol.md': '## Sources\n', 'docs/bus.md': markdown })).toEqual([]);
  });

  it('references — each kind of missing reference is named with its line', () => {
    const markdown = [
      '`libs/bus/src/gone.ts`, `gone-elsewhere.ts`, `README.md`',
      '`handOverStored` and `EventFollower.shortcut`',
      '`SVC_NOT_A_SETTING`, `svc_not_a_table`, `NOT_A_CONSTANT`',
      '[a](missing.md) [b](protocol.md#no-such-heading) [c](../../shared/DESIGN.md) [d](#nowhere)',
    ].join('\n');
    expect(docProblems('docs/x.md', markdown, context({ 'docs/protocol.md': '## Sources\n', 'docs/x.md': markdown }))).toEqual([
      { line: 1, message: '`libs/bus/src/gone.ts` names no file or directory of the repository (nor a file the code makes)' },
      { line: 1, message: '`gone-elsewhere.ts` names no file or directory of the repository (nor a file the code makes)' },
      { line: 2, message: '`handOverStored` is declared nowhere in the sources (and is not in foreign-names.ts)' },
      { line: 2, message: '`shortcut` is declared nowhere in the sources (and is not in foreign-names.ts)' },
      { line: 3, message: '`SVC_NOT_A_SETTING` is spelled nowhere in the code' },
      { line: 3, message: '`svc_not_a_table` is spelled nowhere in the code' },
      { line: 3, message: '`NOT_A_CONSTANT` is declared nowhere in the sources (and is not in foreign-names.ts)' },
      { line: 4, message: 'link `missing.md`: the repository has no docs/missing.md' },
      { line: 4, message: 'link `protocol.md#no-such-heading`: docs/protocol.md has no heading with the anchor #no-such-heading' },
      { line: 4, message: 'link `../../shared/DESIGN.md` leads outside the repository' },
      { line: 4, message: 'link `#nowhere`: docs/x.md has no heading with the anchor #nowhere' },
    ]);
  });

  it('references — a doc named by its bare file name must be in the repository, whatever the code spells', () => {
    const repository = context().repository;
    repository.spelled.add('DESIGN.md');
    const problems = docProblems('docs/x.md', '`DESIGN.md` says why', { ...context(), repository });
    expect(problems.map((problem) => problem.message)).toEqual(['`DESIGN.md` names no file or directory of the repository (nor a file the code makes)']);
  });
});
