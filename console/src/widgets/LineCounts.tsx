/** Lines added and removed, in colour and in words for a screen reader: "+12 −3". */
export function LineCounts({ additions, deletions }: { additions: number; deletions: number }) {
  return (
    <span className="line-counts">
      <span className="additions">
        +{additions}
        <span className="visually-hidden"> lines added,</span>
      </span>{' '}
      <span className="deletions">
        −{deletions}
        <span className="visually-hidden"> lines removed</span>
      </span>
    </span>
  );
}
