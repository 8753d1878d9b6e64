import { useEffect, useState } from 'react';
import { apiPaths, type ListResponseOf, type TemplateSummary } from '@svc/protocol';
import { reasonOf } from '../api.js';
import { useConsole } from '../console-context.js';
import { EMPTY_CANDIDATE, withRule, type CandidateList, type CandidateText } from '../policy-candidate.js';
import { CandidateEditor } from '../widgets/CandidateEditor.js';
import { PolicyReplayPanel } from '../widgets/PolicyReplayPanel.js';
import { PolicySuggestions } from '../widgets/PolicySuggestions.js';
import { RulesPanel } from '../widgets/RulesPanel.js';
import { tabIds, Tabs, type Tab } from '../widgets/Tabs.js';

type PolicyTab = 'learned' | 'rules';

const TABS: ReadonlyArray<Tab<PolicyTab>> = [
  { id: 'learned', label: 'Suggestions and replay' },
  { id: 'rules', label: 'Rules' },
];

/** The fewest decisions behind a suggestion unless told (the API's default), and at most. */
const DEFAULT_MIN_EVIDENCE = 5;
const MAX_MIN_EVIDENCE = 1000;

/** The page's query: `?template=`, `?min_evidence=` and `?tab=rules` open it so (a link to share). */
function initialQuery() {
  const query = new URLSearchParams(window.location.search);
  const minEvidence = Number(query.get('min_evidence'));
  return {
    template: query.get('template') ?? undefined,
    minEvidence: Number.isInteger(minEvidence) && minEvidence >= 1 && minEvidence <= MAX_MIN_EVIDENCE ? minEvidence : DEFAULT_MIN_EVIDENCE,
    tab: query.get('tab') === 'rules' ? ('rules' as const) : ('learned' as const),
  };
}

/** Puts `values` in the page's query (undefined: removes it), the rest kept, as the same entry of the history. */
function showInAddress(values: Record<string, string | undefined>): void {
  const query = new URLSearchParams(window.location.search);
  for (const [name, value] of Object.entries(values)) {
    if (value === undefined) query.delete(name);
    else query.set(name, value);
  }
  const text = query.toString();
  window.history.replaceState(null, '', `${window.location.pathname}${text ? `?${text}` : ''}`);
}

/**
 * The policy learned from people's decisions (docs/policy.md): a template's suggested rules, a
 * candidate policy built from them and replayed over its past requests; and the rules people gave
 * with "always" (docs/teams.md, "Rules"), searchable and revocable. Both panels stay in the page,
 * so the candidate survives a look at the rules.
 */
export function PolicyPage() {
  const [initial] = useState(initialQuery);
  const [tab, setTab] = useState<PolicyTab>(initial.tab);
  const select = (next: PolicyTab) => {
    setTab(next);
    showInAddress({ tab: next === 'rules' ? 'rules' : undefined });
  };
  return (
    <section aria-labelledby="policy-title">
      <h1 id="policy-title">Policy</h1>
      <Tabs label="Policy" tabs={TABS} selected={tab} onSelect={select} />
      <div role="tabpanel" id={tabIds('learned').panel} aria-labelledby={tabIds('learned').tab} className="policy-panel" hidden={tab !== 'learned'}>
        <LearnedPolicy initialTemplate={initial.template} initialMinEvidence={initial.minEvidence} />
      </div>
      <div role="tabpanel" id={tabIds('rules').panel} aria-labelledby={tabIds('rules').tab} className="policy-panel" hidden={tab !== 'rules'}>
        <RulesPanel />
      </div>
    </section>
  );
}

/** A template's suggestions, the candidate they are added to, and its replay. */
function LearnedPolicy({ initialTemplate, initialMinEvidence }: { initialTemplate: string | undefined; initialMinEvidence: number }) {
  const { api } = useConsole();
  const [templates, setTemplates] = useState<string[]>();
  const [failure, setFailure] = useState<string>();
  const [template, setTemplate] = useState(initialTemplate);
  const [minEvidence, setMinEvidence] = useState(String(initialMinEvidence));
  const [candidate, setCandidate] = useState<CandidateText>(EMPTY_CANDIDATE);
  const [added, setAdded] = useState<string>();
  useEffect(() => {
    api
      .request<ListResponseOf<TemplateSummary>>('GET', apiPaths.templates)
      .then((list) => {
        const names = list.items.map((item) => item.name);
        // A template named in the link stays choosable: its sessions' history outlives its file.
        setTemplates(initialTemplate && !names.includes(initialTemplate) ? [initialTemplate, ...names] : names);
        setTemplate((chosen) => chosen ?? names[0]);
      })
      .catch((err: unknown) => setFailure(`The templates could not be listed: ${reasonOf(err)}`));
  }, [api, initialTemplate]);
  const evidence = Number(minEvidence);
  const evidenceValid = Number.isInteger(evidence) && evidence >= 1 && evidence <= MAX_MIN_EVIDENCE;
  // The address says what is shown: a link to it opens the same.
  useEffect(() => {
    if (!template) return;
    showInAddress({ template, min_evidence: evidenceValid && evidence !== DEFAULT_MIN_EVIDENCE ? String(evidence) : undefined });
  }, [template, evidence, evidenceValid]);
  const add = (list: CandidateList, rule: string) => {
    const next = withRule(candidate, list, rule);
    setAdded(next === candidate ? `${rule} is in the candidate's ${list} already.` : `Added ${rule} to the candidate's ${list}.`);
    setCandidate(next);
  };

  return (
    <>
      <p className="since">
        Rules proposed from what people decided on a template&apos;s requests, and a candidate policy replayed over those requests before anyone adopts it.
      </p>
      <form className="policy-choice" aria-label="Which requests" onSubmit={(event) => event.preventDefault()}>
        <label>
          Template
          <select value={template ?? ''} onChange={(event) => setTemplate(event.target.value)} disabled={!templates}>
            {(templates ?? [template ?? '']).map((name) => (
              <option key={name} value={name}>
                {name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Fewest decisions behind a suggestion
          <input
            type="number"
            inputMode="numeric"
            min={1}
            max={MAX_MIN_EVIDENCE}
            value={minEvidence}
            onChange={(event) => setMinEvidence(event.target.value)}
            aria-invalid={!evidenceValid}
          />
        </label>
      </form>
      {!evidenceValid && (
        <p role="alert" className="error">
          The fewest decisions behind a suggestion is a whole number from 1 to {MAX_MIN_EVIDENCE}.
        </p>
      )}
      {failure && (
        <p role="alert" className="error">
          {failure}
        </p>
      )}
      {templates?.length === 0 && <p>No template yet: suggestions are read from the sessions of one.</p>}
      {template && (
        <>
          {evidenceValid && <PolicySuggestions template={template} minEvidence={evidence} candidate={candidate} onAdd={add} />}
          <p role="status" className="outcome">
            {added}
          </p>
          <CandidateEditor candidate={candidate} onChange={setCandidate} />
          <PolicyReplayPanel template={template} candidate={candidate} />
        </>
      )}
    </>
  );
}
