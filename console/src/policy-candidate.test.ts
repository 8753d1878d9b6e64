import { describe, expect, it } from 'vitest';
import type { PolicyReplay } from '@svc/protocol';
import { candidatePolicy, candidateToml, EMPTY_CANDIDATE, isDisagreement, withRule } from './policy-candidate.js';

type ReplayItem = PolicyReplay['items'][number];

const item = (decision: ReplayItem['policy']['decision'], outcome: ReplayItem['people']['outcome']): ReplayItem => ({
  worker_id: 'wrk_1',
  request_id: 'req_1',
  tool_name: 'Bash',
  input: { command: 'ls' },
  at: '2026-01-01T00:00:00.000Z',
  policy: { decision, reason: 'why' },
  people: { outcome },
});

describe('policy candidate', () => {
  it('candidate — a suggestion is added on a line of its own at the end of its list, once', () => {
    const once = withRule({ ...EMPTY_CANDIDATE, auto_approve: 'Bash(git *)\n\n' }, 'auto_approve', 'Bash(npm test)');
    expect(once.auto_approve).toBe('Bash(git *)\nBash(npm test)');
    expect(withRule(once, 'auto_approve', 'Bash(npm test)')).toBe(once);
    expect(withRule(EMPTY_CANDIDATE, 'deny', 'Bash(curl *)').deny).toBe('Bash(curl *)');
  });

  it('candidate — its lines are trimmed rules, blank lines dropped; a rule over the caps is named by list and line', () => {
    expect(candidatePolicy({ auto_approve: ' Bash(npm test) \n\nRead', deny: '', ask: 'Bash(rm *)' })).toEqual({
      policy: { auto_approve: ['Bash(npm test)', 'Read'], deny: [], ask: ['Bash(rm *)'] },
    });
    const problem = candidatePolicy({ ...EMPTY_CANDIDATE, deny: `Read\nBash(${'*'.repeat(65)})` });
    expect(problem).toEqual({
      problem: expect.stringMatching(/^deny, line 2: the rule "Bash\(\*+\)" has 65 wildcards \(\* and \?\); a rule may have at most 64\.$/),
    });
  });

  it('candidate — written as the template has its lists, the empty ones left out', () => {
    expect(candidateToml({ auto_approve: 'Bash(npm test)\nWrite("a")', deny: '', ask: 'Bash(rm *)' })).toBe(
      '[sidecar]\nauto_approve = ["Bash(npm test)", "Write(\\"a\\")"]\nask = ["Bash(rm *)"]',
    );
  });

  it('replay — a disagreement is the candidate deciding otherwise than the person did; asking is not one', () => {
    expect(isDisagreement(item('allow', 'deny'))).toBe(true);
    expect(isDisagreement(item('deny', 'allow'))).toBe(true);
    expect(isDisagreement(item('allow', 'allow'))).toBe(false);
    expect(isDisagreement(item('ask', 'deny'))).toBe(false);
    expect(isDisagreement(item('allow', 'policy_deny'))).toBe(false);
  });
});
