import { CHANGED_FILE_STATUSES, type ChangedFile, type SessionWorkspace } from '@svc/protocol';

/**
 * A workspace's changes as the console shows them (docs/workspace.md, "Changes"): the summary's
 * words, the stored patch cut into one part per file, and the links people made of them.
 */

/** A commit as people read it: git's short form. */
export const shortCommit = (commit: string): string => commit.slice(0, 7);

/** A repository's short name: its URL's last segment without `.git` (`https://git.example.com/org/app.git` → `app`). */
export function repositoryName(repo: string): string {
  const last = repo.replace(/\/+$/, '').split('/').at(-1) ?? repo;
  return last.replace(/\.git$/, '') || repo;
}

/** "3 files changed: 1 added, 2 modified"; `more`: the report lists only the first files. */
export function filesChangedText(files: readonly ChangedFile[], more = false): string {
  if (files.length === 0) return 'No files changed';
  const counts = CHANGED_FILE_STATUSES.map((status) => [status, files.filter((file) => file.status === status).length] as const)
    .filter(([, count]) => count > 0)
    .map(([status, count]) => `${count} ${status}`);
  return `${files.length}${more ? '+' : ''} ${files.length === 1 && !more ? 'file' : 'files'} changed: ${counts.join(', ')}`;
}

/** A session's changes in a few characters for the sessions list ("3 files +10 −2"), or nothing before the first report. */
export function sessionChangesText(workspace: SessionWorkspace): string | undefined {
  if (workspace.files_changed === undefined) return undefined;
  const files = `${workspace.files_changed} ${workspace.files_changed === 1 ? 'file' : 'files'}`;
  return `${files} +${workspace.additions ?? 0} −${workspace.deletions ?? 0}`;
}

/** The stored patch as `GET …/changes/diff` answers it, and whether it is whole (its headers say). */
export interface StoredPatch {
  text: string;
  /** `X-Svc-Patch-Truncated`: the patch stops at a file's start; the files after it have no part. */
  truncated: boolean;
  /** `X-Svc-Patch-Bytes`: the whole patch's size (more than `text` when truncated). */
  wholeBytes: number | undefined;
}

export function storedPatchOf(text: string, headers: Pick<Headers, 'get'>): StoredPatch {
  const bytes = Number(headers.get('x-svc-patch-bytes') ?? Number.NaN);
  return { text, truncated: headers.get('x-svc-patch-truncated') === 'true', wholeBytes: Number.isSafeInteger(bytes) && bytes >= 0 ? bytes : undefined };
}

/** A patch cut into its files' parts (each from its `diff --git` line), as the gateway cuts it for `?path=`. */
export function patchParts(patch: string): string[] {
  return patch.split(/(?=^diff --git )/m).filter((part) => part.startsWith('diff --git '));
}

/**
 * The part of `parts` about `file`: the one whose `diff --git a/… b/…` line names its path (a renamed
 * file's new one). Matched on the path the report gives, not parsed from the line: a path may hold spaces.
 */
export function partOfFile(parts: readonly string[], file: ChangedFile): string | undefined {
  return parts.find((part) => {
    const header = part.slice(0, part.indexOf('\n') >>> 0);
    return header.startsWith(`diff --git a/${file.path} b/`) || header.endsWith(` b/${file.path}`) || header.endsWith(` "b/${file.path}"`);
  });
}

/** Whether a file's part says git saw binary content (no lines to show). */
export const isBinaryPart = (part: string): boolean => /^(Binary files .* differ|GIT binary patch)$/m.test(part);

/** The files shown open at first: in order, while their changed lines stay within `lineBudget` (a large diff opens quickly; the rest wait for a click). */
export function filesOpenAtFirst(files: readonly ChangedFile[], lineBudget: number): Set<string> {
  const open = new Set<string>();
  let lines = 0;
  for (const file of files) {
    lines += file.additions + file.deletions;
    if (lines > lineBudget) break;
    open.add(file.path);
  }
  return open;
}

/** A link's target when it is a web page (http or https); anything else (a `javascript:` URL) is no link. */
export function webLink(url: string): string | undefined {
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'https:' || parsed.protocol === 'http:' ? parsed.href : undefined;
  } catch {
    return undefined;
  }
}

/** A pull request's name from its URL: `#12` for a forge's `/pull/12`, `/pulls/12` or `/merge_requests/12`. */
export function pullRequestName(url: string): string {
  const number = /\/(?:pull|pulls|merge_requests)\/(\d+)\/?$/.exec(url)?.[1];
  return number ? `pull request #${number}` : 'pull request';
}
