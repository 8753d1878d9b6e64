import { describe, expect, it } from 'vitest';
import type { ChangedFile } from '@svc/protocol';
import {
  filesChangedText,
  filesOpenAtFirst,
  isBinaryPart,
  partOfFile,
  patchParts,
  pullRequestName,
  repositoryName,
  sessionChangesText,
  shortCommit,
  storedPatchOf,
  webLink,
} from './workspace-changes.js';

const file = (path: string, status: ChangedFile['status'], additions = 1, deletions = 0, extra: Partial<ChangedFile> = {}): ChangedFile => ({
  path,
  status,
  additions,
  deletions,
  ...extra,
});

/** A patch as `git diff -M` writes it: a modification, a rename, a path with a space, a binary file. */
const PATCH = [
  'diff --git a/src/app.ts b/src/app.ts',
  'index 1111111..2222222 100644',
  '--- a/src/app.ts',
  '+++ b/src/app.ts',
  '@@ -1 +1 @@',
  '-old',
  '+new',
  'diff --git a/old.txt b/docs/new name.txt',
  'similarity 100%',
  'rename from old.txt',
  'rename to docs/new name.txt',
  'diff --git a/my notes.md b/my notes.md',
  'new file mode 100644',
  'index 0000000..3333333',
  '--- /dev/null',
  '+++ b/my notes.md',
  '@@ -0,0 +1 @@',
  '+hello',
  'diff --git a/logo.png b/logo.png',
  'index 4444444..5555555 100644',
  'Binary files a/logo.png and b/logo.png differ',
  '',
].join('\n');

describe('workspace changes — the words and parts the Changes tab shows', () => {
  it('repositoryName — the last segment of the URL, without .git or a trailing slash', () => {
    expect(repositoryName('https://git.example.com/org/app.git')).toBe('app');
    expect(repositoryName('https://git.example.com/org/app/')).toBe('app');
    expect(repositoryName('http://127.0.0.1:9418/tools')).toBe('tools');
    expect(shortCommit('0123456789abcdef0123456789abcdef01234567')).toBe('0123456');
  });

  it('filesChangedText — how many files, by status in a fixed order; a cut list says so', () => {
    expect(filesChangedText([])).toBe('No files changed');
    expect(filesChangedText([file('a', 'modified')])).toBe('1 file changed: 1 modified');
    expect(filesChangedText([file('a', 'deleted'), file('b', 'added'), file('c', 'modified'), file('d', 'added')])).toBe(
      '4 files changed: 2 added, 1 modified, 1 deleted',
    );
    expect(filesChangedText([file('a', 'renamed')], true)).toBe('1+ files changed: 1 renamed');
  });

  it('sessionChangesText — files and lines once reported, nothing before', () => {
    expect(sessionChangesText({ repo: 'r', branch: 'b' })).toBeUndefined();
    expect(sessionChangesText({ repo: 'r', branch: 'b', files_changed: 3, additions: 10, deletions: 2 })).toBe('3 files +10 −2');
    expect(sessionChangesText({ repo: 'r', branch: 'b', files_changed: 1 })).toBe('1 file +0 −0');
  });

  it('storedPatchOf — X-Svc-Patch-Truncated and X-Svc-Patch-Bytes; a header missing or malformed is no size', () => {
    expect(storedPatchOf('p', new Headers({ 'X-Svc-Patch-Truncated': 'true', 'X-Svc-Patch-Bytes': '3145728' }))).toEqual({
      text: 'p',
      truncated: true,
      wholeBytes: 3_145_728,
    });
    expect(storedPatchOf('p', new Headers({ 'x-svc-patch-truncated': 'false', 'x-svc-patch-bytes': '12' }))).toMatchObject({
      truncated: false,
      wholeBytes: 12,
    });
    expect(storedPatchOf('p', new Headers())).toMatchObject({ truncated: false, wholeBytes: undefined });
    expect(storedPatchOf('p', new Headers({ 'x-svc-patch-bytes': 'lots' })).wholeBytes).toBeUndefined();
    expect(storedPatchOf('p', new Headers({ 'x-svc-patch-bytes': '-1' })).wholeBytes).toBeUndefined();
  });

  it("partOfFile — each file finds its own part by the report's path: renamed (its new path), with spaces, binary; none for a file past the cut", () => {
    const parts = patchParts(PATCH);
    expect(parts).toHaveLength(4);
    expect(partOfFile(parts, file('src/app.ts', 'modified'))).toContain('+new');
    expect(partOfFile(parts, file('docs/new name.txt', 'renamed', 0, 0, { old_path: 'old.txt' }))).toContain('rename to docs/new name.txt');
    expect(partOfFile(parts, file('my notes.md', 'added'))).toContain('+hello');
    const binary = partOfFile(parts, file('logo.png', 'modified', 0, 0, { binary: true }));
    expect(binary && isBinaryPart(binary)).toBe(true);
    expect(isBinaryPart(parts[0]!)).toBe(false);
    // A path that is the tail of another's is not that file.
    expect(partOfFile(parts, file('app.ts', 'modified'))).toBeUndefined();
    expect(partOfFile(parts, file('later.txt', 'added'))).toBeUndefined();
    expect(patchParts('')).toEqual([]);
  });

  it('filesOpenAtFirst — files open in order while their lines fit the budget; the rest wait', () => {
    const files = [file('a', 'modified', 400, 100), file('b', 'added', 400), file('c', 'modified', 300), file('d', 'modified', 1)];
    expect([...filesOpenAtFirst(files, 1000)]).toEqual(['a', 'b']);
    expect([...filesOpenAtFirst(files, 10_000)]).toEqual(['a', 'b', 'c', 'd']);
    // One file larger than the budget opens on a click, like the rest.
    expect([...filesOpenAtFirst([file('huge', 'added', 50_000)], 1000)]).toEqual([]);
  });

  it('webLink and pullRequestName — only a web page is a link; a forge URL names its pull request', () => {
    expect(webLink('https://forge.example/org/app/pull/12')).toBe('https://forge.example/org/app/pull/12');
    expect(webLink('javascript:alert(1)')).toBeUndefined();
    expect(webLink('data:text/html,hi')).toBeUndefined();
    expect(webLink('not a url')).toBeUndefined();
    expect(pullRequestName('https://github.example/org/app/pull/12')).toBe('pull request #12');
    expect(pullRequestName('https://gitea.example/org/app/pulls/7/')).toBe('pull request #7');
    expect(pullRequestName('https://gitlab.example/org/app/-/merge_requests/3')).toBe('pull request #3');
    expect(pullRequestName('https://forge.example/review?id=3')).toBe('pull request');
  });
});
