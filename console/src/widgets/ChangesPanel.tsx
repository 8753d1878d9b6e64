import { useEffect, useMemo, useState } from 'react';
import type { ViewType } from 'react-diff-view';
import 'react-diff-view/style/index.css';
import { apiPaths, type WorkspaceChanges } from '@svc/protocol';
import { ApiError, reasonOf, type Api } from '../api.js';
import { useConsole } from '../console-context.js';
import { formatAge } from '../format-age.js';
import { formatSize } from '../message-images.js';
import { usePolling } from '../use-polling.js';
import { filesChangedText, filesOpenAtFirst, partOfFile, patchParts, shortCommit, storedPatchOf, type StoredPatch } from '../workspace-changes.js';
import { FileDiff } from './FileDiff.js';
import { LineCounts } from './LineCounts.js';
import { PullRequestForm } from './PullRequestForm.js';
import { PushForm } from './PushForm.js';

/** How often the open tab reads the changes again: the sidecar reports after each of the agent's turns. */
const CHANGES_REFRESH_MS = 3000;
/** The changed lines shown at once when the tab opens; files past them open on a click. */
const LINES_OPEN_AT_FIRST = 3000;
/** Below this width, side by side leaves too little of each line: the diff starts unified. */
const NARROW_SCREEN = '(max-width: 640px)';

/** The changes as last read: reported, or why there are none (a 404 of its own code is no failure). */
type ChangesRead = { kind: 'reported'; changes: WorkspaceChanges } | { kind: 'no_repository' } | { kind: 'changes_not_found' };

async function readChanges(api: Api, workerId: string): Promise<ChangesRead> {
  try {
    return { kind: 'reported', changes: await api.request<WorkspaceChanges>('GET', apiPaths.changes(workerId)) };
  } catch (err) {
    if (err instanceof ApiError && (err.code === 'no_repository' || err.code === 'changes_not_found')) return { kind: err.code };
    throw err;
  }
}

/**
 * A worker's Changes tab (docs/console.md): what its sidecar last reported of the workspace's
 * changes, read every few seconds while the tab is open, with the patch read again whenever a
 * new report comes; a push and a pull request from there.
 */
export function ChangesPanel({ workerId }: { workerId: string }) {
  const { api } = useConsole();
  const { value, error } = usePolling(() => readChanges(api, workerId), [api, workerId], CHANGES_REFRESH_MS);
  if (value === undefined) return error ? <p role="alert">{error}</p> : <p>Loading the changes…</p>;
  if (value.kind === 'no_repository') return <p>This worker has no repository: its template has no workspace.</p>;
  if (value.kind === 'changes_not_found') return <p>No changes reported yet: the worker reports them after each of its agent's turns.</p>;
  return <ReportedChanges workerId={workerId} changes={value.changes} error={error} />;
}

/** Why a file has no part of the patch to show. */
function missingPartNote(patch: StoredPatch | undefined): string {
  if (!patch) return 'No diff: the patch could not be read.';
  return patch.truncated ? 'Not in the stored patch: it was cut short before this file.' : 'The patch has no part about this file.';
}

/** A report and its patch, shown together: a new report's files wait for its own patch. */
interface ShownReport {
  changes: WorkspaceChanges;
  patch: StoredPatch | undefined;
}

function ReportedChanges({ workerId, changes, error }: { workerId: string; changes: WorkspaceChanges; error: string | undefined }) {
  const { api } = useConsole();
  const [shown, setShown] = useState<ShownReport>();
  const [patchFailure, setPatchFailure] = useState<string>();
  const [viewType, setViewType] = useState<ViewType>(() => (window.matchMedia(NARROW_SCREEN).matches ? 'unified' : 'split'));

  // A new report is a new patch (the same report read again is not); after a failure, each read of the changes tries again.
  const patchWanted = patchFailure === undefined ? changes.reported_at : changes;
  useEffect(() => {
    let stopped = false;
    api
      .text(apiPaths.changesDiff(workerId))
      .then(({ text, headers }) => {
        if (stopped) return;
        setShown({ changes, patch: storedPatchOf(text, headers) });
        setPatchFailure(undefined);
      })
      .catch((err: unknown) => {
        if (stopped) return;
        // The files are still worth seeing without their diff (a patch kept less long than its summary).
        setShown({ changes, patch: undefined });
        setPatchFailure(`The patch could not be read: ${reasonOf(err)}`);
      });
    return () => {
      stopped = true;
    };
  }, [api, workerId, patchWanted]);

  const parts = useMemo(() => patchParts(shown?.patch?.text ?? ''), [shown]);
  const openAtFirst = useMemo(() => filesOpenAtFirst(shown?.changes.files ?? [], LINES_OPEN_AT_FIRST), [shown]);
  const truncated = changes.truncated || shown?.patch?.truncated === true;

  return (
    <div className="changes">
      {error && <p role="alert">{error}</p>}
      <dl className="changes-summary">
        <div>
          <dt>Files</dt>
          <dd>{filesChangedText(changes.files, changes.files_truncated)}</dd>
        </div>
        <div>
          <dt>Lines</dt>
          <dd>
            <LineCounts additions={changes.additions} deletions={changes.deletions} />
          </dd>
        </div>
        <div>
          <dt>Branch</dt>
          <dd>
            <code>{changes.branch}</code>
          </dd>
        </div>
        <div>
          <dt>Commits</dt>
          <dd>
            <code title={changes.base_commit}>{shortCommit(changes.base_commit)}</code> (base) →{' '}
            <code title={changes.head_commit}>{shortCommit(changes.head_commit)}</code> (head)
          </dd>
        </div>
        <div>
          <dt>Reported</dt>
          <dd>
            <time dateTime={changes.reported_at}>{formatAge(changes.reported_at)} ago</time>
          </dd>
        </div>
        <div>
          <dt>Repository</dt>
          <dd>
            <code>{changes.repo}</code>
          </dd>
        </div>
      </dl>
      {truncated && (
        <p className="notice warn">
          The patch is larger than svc keeps: {formatSize(shown?.patch?.wholeBytes ?? changes.patch_bytes)} in all. It is cut at a file&apos;s start; the files
          after the cut show no diff here.
        </p>
      )}
      {changes.files_truncated && <p className="notice warn">The report lists only the first {changes.files.length} files.</p>}
      <div className="changes-actions">
        <PushForm workerId={workerId} branch={changes.branch} pushed={changes.pushed} />
        <PullRequestForm workerId={workerId} existing={changes.pull_request} />
      </div>
      <div className="diff-toolbar">
        <h2>Diff</h2>
        <div role="group" aria-label="Diff layout" className="segmented">
          <button type="button" aria-pressed={viewType === 'split'} onClick={() => setViewType('split')}>
            Side by side
          </button>
          <button type="button" aria-pressed={viewType === 'unified'} onClick={() => setViewType('unified')}>
            Unified
          </button>
        </div>
      </div>
      {patchFailure && <p role="alert">{patchFailure}</p>}
      {shown === undefined ? (
        <p>Loading the diff…</p>
      ) : (
        shown.changes.files.map((file) => (
          <FileDiff
            key={file.path}
            file={file}
            part={shown.patch && partOfFile(parts, file)}
            missingPartNote={missingPartNote(shown.patch)}
            viewType={viewType}
            openAtFirst={openAtFirst.has(file.path)}
          />
        ))
      )}
    </div>
  );
}
