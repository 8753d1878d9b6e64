import { CANDIDATE_LISTS, candidateToml, type CandidateList, type CandidateText } from '../policy-candidate.js';

/** What each list does, as the sidecar applies them (deny first, then ask, then auto_approve; the rest asked). */
const LIST_WORDS: Record<CandidateList, string> = {
  auto_approve: 'allowed, nobody asked',
  deny: 'refused, nobody asked',
  ask: 'asked, whatever auto_approve says',
};

/**
 * The candidate policy: a template's three `[sidecar]` lists, one rule a line (`Bash(npm test)`,
 * `Bash(git *)`, `Read`), and the same as the template's TOML to copy once it replays well.
 */
export function CandidateEditor({ candidate, onChange }: { candidate: CandidateText; onChange: (next: CandidateText) => void }) {
  return (
    <section aria-labelledby="candidate-title">
      <h2 id="candidate-title">Candidate policy</h2>
      <p id="candidate-hint" className="since">
        One rule a line: <code>Tool</code>, or <code>Tool(pattern)</code> over its main input (<code>*</code> any text, <code>?</code> one character). Nothing
        here changes the template: once it replays well, copy the lists into its <code>[sidecar]</code> table.
      </p>
      <div className="candidate-lists">
        {CANDIDATE_LISTS.map((list) => (
          <label key={list}>
            <span>
              <code className="list-name">{list}</code>: {LIST_WORDS[list]}
            </span>
            <textarea
              value={candidate[list]}
              onChange={(event) => onChange({ ...candidate, [list]: event.target.value })}
              rows={5}
              spellCheck={false}
              autoCapitalize="off"
              autoCorrect="off"
              wrap="off"
              aria-describedby="candidate-hint"
            />
          </label>
        ))}
      </div>
      <details className="candidate-toml">
        <summary>As the template&apos;s lists</summary>
        <pre>{candidateToml(candidate)}</pre>
      </details>
    </section>
  );
}
