import Type, { type Static } from 'typebox';
import { CodedError } from './errors.js';
import { CommitId, Timestamp, WorkerId } from './primitives.js';

/**
 * The workspace (docs/workspace.md): a repository cloned into the sandbox, fetched from and pushed
 * to through the control plane's git proxy, and the agent's changes reported, stored and
 * reviewable after the sandbox is gone.
 */

/** A branch, tag or commit as svc takes it (never a leading `-`: a value never becomes an option on git's command line). */
export const GitName = Type.String({ pattern: '^[A-Za-z0-9._/+@^~][A-Za-z0-9._/+@^~-]*$', maxLength: 255 });

/** A session's changes to its template's `[workspace]` (`overrides.workspace`), each as far as the template's `[overrides]` lets the person. */
export const WorkspaceOverridesSchema = Type.Object(
  {
    repo: Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })),
    ref: Type.Optional(GitName),
    branch: Type.Optional(GitName),
  },
  { additionalProperties: false },
);

/** The tool a push through the git proxy is asked as: rules name the ref, `git_push(refs/heads/svc/*)`. */
export const GIT_PUSH_TOOL = 'git_push';

/** A `git_push` request's input: what the push would do, read by the control plane from the push itself. */
export interface GitPushInput {
  /** The full ref name the push updates (`refs/heads/svc/ses_…`): what a rule's pattern is matched against. */
  ref: string;
  /** The commit the ref is at on the remote (forty zeros: the ref is new). */
  old_commit: string;
  /** The commit it would point at (forty zeros: the ref is deleted). */
  new_commit: string;
  /** The repository pushed to. */
  remote: string;
  /** The commits the push carries, newest first (at most `GIT_PUSH_LISTED_COMMITS`), read from its pack. */
  commits: Array<{ sha: string; subject: string; author: string }>;
  /** Files the pushed commits add or change (their content is in the pack); a deletion is not listed. At most `GIT_PUSH_LISTED_PATHS`. */
  paths: string[];
  /** Whether `commits` or `paths` were cut short. */
  truncated?: boolean;
  /**
   * The new commit is on the remote already (another ref has it, e.g. the work branch pushed
   * first): the push carries none of its commits, so `commits` and `paths` are empty.
   */
  already_on_remote?: boolean;
}

export const GIT_PUSH_LISTED_COMMITS = 100;
export const GIT_PUSH_LISTED_PATHS = 500;

/** A ref that is no commit: the old side of a new ref, the new side of a deletion. */
export const ZERO_COMMIT = '0'.repeat(40);

const ToolRules = Type.Array(Type.String({ minLength: 1, maxLength: 1024 }), { default: [] });

/**
 * A worker's repository as the gateway's git proxy needs it (kept in its record): where fetches
 * and pushes go, and the template's rules for `git_push`.
 */
export const WorkerWorkspaceSchema = Type.Object(
  {
    repo: Type.String({ description: 'The repository, an http(s) URL without credentials.' }),
    /** The branch the work goes to (`svc/<session id>` unless the template names one). */
    branch: Type.String(),
    /** The template's rules that name `git_push` (from its auto_approve, deny and ask lists). */
    push_rules: Type.Object({ auto_approve: ToolRules, deny: ToolRules, ask: ToolRules }, { additionalProperties: false }),
    /** Nobody is asked: a push nothing denies is allowed. */
    autonomous: Type.Boolean({ default: false }),
  },
  { additionalProperties: false },
);
export type WorkerWorkspace = Static<typeof WorkerWorkspaceSchema>;

/** The sidecar's view of the workspace (its config): the repository its git proxy stands for, and the commit the changes are counted from. */
export const SidecarWorkspaceSchema = Type.Object(
  {
    repo: Type.String(),
    branch: Type.String(),
    base_commit: CommitId,
    /** Where the repository is in the sandbox. */
    path: Type.String({ default: '/workspace' }),
  },
  { additionalProperties: false },
);
export type SidecarWorkspace = Static<typeof SidecarWorkspaceSchema>;

export const CHANGED_FILE_STATUSES = ['added', 'modified', 'deleted', 'renamed'] as const;

const ChangedFileSchema = Type.Object(
  {
    path: Type.String(),
    /** A renamed file's former path. */
    old_path: Type.Optional(Type.String()),
    status: Type.Enum(CHANGED_FILE_STATUSES),
    additions: Type.Integer({ minimum: 0 }),
    deletions: Type.Integer({ minimum: 0 }),
    /** Binary content: no line counts. */
    binary: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false, title: 'ChangedFile' },
);
export type ChangedFile = Static<typeof ChangedFileSchema>;

/** The most files one report lists; past it the report says `files_truncated`. */
export const WORKSPACE_LISTED_FILES = 2000;
/** The most of a patch the control plane stores; past it the patch is stored cut at a file boundary and `truncated` says so. */
export const WORKSPACE_PATCH_LIMIT_BYTES = 1024 * 1024;

/** The largest workspace file `GET …/files/{path}` serves (it travels over the bus, base64). */
export const WORKSPACE_FILE_LIMIT_BYTES = 512 * 1024;

/** How long a stored patch is kept after it was reported (its summary is kept with the worker's record of changes). */
export const WORKSPACE_PATCHES_KEPT_MS = 90 * 24 * 3600 * 1000;

/** What a sidecar reports of its workspace (`PUT /v1/workers/{id}/changes`, worker token). */
export const ChangesReportSchema = Type.Object(
  {
    base_commit: CommitId,
    /** The work branch's commit (the agent's commits); the uncommitted changes are counted on top of it. */
    head_commit: CommitId,
    branch: Type.String({ maxLength: 255 }),
    files: Type.Array(ChangedFileSchema, { maxItems: WORKSPACE_LISTED_FILES }),
    files_truncated: Type.Optional(Type.Boolean()),
    /** The unified diff of base against the working tree (untracked files included), at most `WORKSPACE_PATCH_LIMIT_BYTES`. */
    patch: Type.String({ maxLength: WORKSPACE_PATCH_LIMIT_BYTES }),
    /** The whole patch's size in bytes, when `patch` holds less of it. */
    patch_bytes: Type.Integer({ minimum: 0 }),
    truncated: Type.Boolean(),
  },
  { additionalProperties: false, title: 'ChangesReport' },
);
export type ChangesReport = Static<typeof ChangesReportSchema>;

/** A push a person made (`POST …/changes/push`). */
export const PushRecordSchema = Type.Object(
  { branch: Type.String(), commit: CommitId, remote: Type.String(), by: Type.String(), at: Timestamp },
  { additionalProperties: false, title: 'PushRecord' },
);
export type PushRecord = Static<typeof PushRecordSchema>;

/** A pull request a person opened (`POST …/changes/pull-request`). */
export const PullRequestRecordSchema = Type.Object(
  { url: Type.String(), number: Type.Integer(), head: Type.String(), base: Type.String(), title: Type.String(), by: Type.String(), at: Timestamp },
  { additionalProperties: false, title: 'PullRequestRecord' },
);
export type PullRequestRecord = Static<typeof PullRequestRecordSchema>;

/** `GET /v1/workers/{id}/changes`: the last report, as stored (the patch apart), and what people did with it. */
export const WorkspaceChangesSchema = Type.Object(
  {
    worker_id: WorkerId,
    repo: Type.String(),
    base_commit: CommitId,
    head_commit: CommitId,
    branch: Type.String(),
    files: Type.Array(ChangedFileSchema),
    files_truncated: Type.Boolean(),
    additions: Type.Integer({ minimum: 0 }),
    deletions: Type.Integer({ minimum: 0 }),
    patch_bytes: Type.Integer({ minimum: 0 }),
    /** The stored patch is cut short (`patch_bytes` is the whole one's size). */
    truncated: Type.Boolean(),
    reported_at: Timestamp,
    pushed: Type.Optional(PushRecordSchema),
    pull_request: Type.Optional(PullRequestRecordSchema),
  },
  { additionalProperties: false, title: 'WorkspaceChanges' },
);
export type WorkspaceChanges = Static<typeof WorkspaceChangesSchema>;

export const ChangesDiffQuery = Type.Object({
  path: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
  /** The whole diff, read now in the sandbox (while it lives), however large: not the stored one, which may be cut short. */
  full: Type.Boolean({ default: false }),
});

/** The largest whole diff `?full=true` serves (the object store's client holds what it writes until it is acknowledged: the session service's memory grows by about this much). */
export const WORKSPACE_FULL_PATCH_LIMIT_BYTES = 64 * 1024 * 1024;

export const PushChangesBody = Type.Object(
  {
    branch: Type.Optional(Type.String({ minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9._/-]+$' })),
    message: Type.Optional(Type.String({ minLength: 1, maxLength: 10_000 })),
  },
  { additionalProperties: false },
);
export type PushChangesBodyType = Static<typeof PushChangesBody>;

export const PullRequestBody = Type.Object(
  {
    title: Type.String({ minLength: 1, maxLength: 256 }),
    body: Type.Optional(Type.String({ maxLength: 65_536 })),
    base: Type.Optional(Type.String({ minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9._/-]+$' })),
  },
  { additionalProperties: false },
);
export type PullRequestBodyType = Static<typeof PullRequestBody>;

/** Whether a workspace-relative path stays inside the workspace (no `..`, not absolute, no NUL). */
export function isWorkspacePath(path: string): boolean {
  if (path === '' || path.startsWith('/') || path.includes('\0') || path.includes('\\')) return false;
  return path.split('/').every((part) => part !== '..' && part !== '.' && part !== '');
}

/** A session's repository as session lists show it (docs/workspace.md): where the work goes and how much it changed. */
export const SessionWorkspaceSchema = Type.Object(
  {
    repo: Type.String(),
    branch: Type.String(),
    /** From the last changes report; absent before the first. */
    files_changed: Type.Optional(Type.Integer({ minimum: 0 })),
    additions: Type.Optional(Type.Integer({ minimum: 0 })),
    deletions: Type.Optional(Type.Integer({ minimum: 0 })),
    /** The pull request a person opened. */
    pull_request_url: Type.Optional(Type.String()),
  },
  { additionalProperties: false, title: 'SessionWorkspace' },
);
export type SessionWorkspace = Static<typeof SessionWorkspaceSchema>;

/** A worker's repository, or `404 no_repository` when its template has none (every workspace route's first check). */
export function workspaceOfWorker<W extends { workspace?: WorkerWorkspace | undefined }>(
  workerId: string,
  worker: W | undefined,
): W & { workspace: WorkerWorkspace } {
  if (!worker?.workspace) throw new CodedError('no_repository', `worker ${workerId} has no repository (its template has no [workspace])`);
  return worker as W & { workspace: WorkerWorkspace };
}
