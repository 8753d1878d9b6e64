import { useId, useMemo, useState } from 'react';
import { Decoration, Diff, Hunk, parseDiff, type ViewType } from 'react-diff-view';
import type { ChangedFile } from '@svc/protocol';
import { tokensOf } from '../diff-highlighting.js';
import { isBinaryPart } from '../workspace-changes.js';
import { LineCounts } from './LineCounts.js';

/**
 * One changed file: its path, status and line counts, then its part of the patch as a diff, side
 * by side or unified, highlighted in its language. Closed, it renders no diff (a large change
 * opens quickly, and each file is tokenized only once shown).
 */
export function FileDiff({
  file,
  part,
  missingPartNote,
  viewType,
  openAtFirst,
}: {
  file: ChangedFile;
  /** Its part of the stored patch; none when the patch holds none (cut short before it). */
  part: string | undefined;
  /** What to say in its place when there is no part. */
  missingPartNote: string;
  viewType: ViewType;
  openAtFirst: boolean;
}) {
  const [open, setOpen] = useState(openAtFirst);
  const id = useId();
  const binary = file.binary === true || (part !== undefined && isBinaryPart(part));
  return (
    <section className="file-diff" aria-labelledby={`${id}-path`}>
      <header>
        <h3 id={`${id}-path`}>
          <code>{file.old_path ? `${file.old_path} → ${file.path}` : file.path}</code>
        </h3>
        <span className={`file-status file-status-${file.status}`}>{file.status}</span>
        {binary ? <span className="binary">binary</span> : <LineCounts additions={file.additions} deletions={file.deletions} />}
        <button type="button" className="quiet" aria-expanded={open} aria-controls={`${id}-diff`} onClick={() => setOpen(!open)}>
          {open ? 'Hide' : 'Show'}
          <span className="visually-hidden"> the diff of {file.path}</span>
        </button>
      </header>
      <div id={`${id}-diff`} hidden={!open}>
        {open && <FileDiffBody file={file} part={part} binary={binary} missingPartNote={missingPartNote} viewType={viewType} />}
      </div>
    </section>
  );
}

function FileDiffBody({
  file,
  part,
  binary,
  missingPartNote,
  viewType,
}: {
  file: ChangedFile;
  part: string | undefined;
  binary: boolean;
  missingPartNote: string;
  viewType: ViewType;
}) {
  // One part is one file; its path is the report's (the parser reads a path with spaces wrongly, not its lines).
  const parsed = useMemo(() => (part === undefined || binary ? undefined : parseDiff(part, { nearbySequences: 'zip' })[0]), [part, binary]);
  const tokens = useMemo(() => (parsed && parsed.hunks.length > 0 ? tokensOf(parsed.hunks, file.path) : undefined), [parsed, file.path]);
  if (binary) return <p className="file-note">A binary file: there are no lines to show.</p>;
  if (part === undefined) return <p className="file-note">{missingPartNote}</p>;
  if (!parsed || parsed.hunks.length === 0)
    return <p className="file-note">{file.status === 'renamed' ? 'Renamed, its lines unchanged.' : 'No lines changed (an empty file, or its mode only).'}</p>;
  return (
    <Diff viewType={viewType} diffType={parsed.type} hunks={parsed.hunks} tokens={tokens ?? null} className="diff-table">
      {(hunks) =>
        hunks.flatMap((hunk) => [<Decoration key={`at-${hunk.content}`}>{hunk.content}</Decoration>, <Hunk key={`hunk-${hunk.content}`} hunk={hunk} />])
      }
    </Diff>
  );
}
