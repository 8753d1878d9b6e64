import { describe, expect, it } from 'vitest';
import { codexSettingsFor } from './codex-settings.js';

const lists = (auto_approve: string[], deny: string[] = [], ask: string[] = []) => ({ auto_approve, deny, ask });

describe("Codex's sandbox from svc's permission lists", () => {
  it('read-only unless every file change is auto-approved: then each patch reaches the engine', () => {
    expect(codexSettingsFor(lists([]), false).sandbox).toBe('read-only');
    expect(codexSettingsFor(lists(['file_change(/workspace/docs/*)']), false).sandbox).toBe('read-only');
    for (const rule of ['file_change', 'file_change(*)', '*', 'file_*']) expect(codexSettingsFor(lists([rule]), false).sandbox, rule).toBe('workspace-write');
  });

  it('read-only whenever a rule limits commands or file changes (inside workspace-write Codex would run them unasked)', () => {
    expect(codexSettingsFor(lists(['file_change'], ['command_execution(rm *)']), true)).toMatchObject({
      sandbox: 'read-only',
      reason: expect.stringContaining('command_execution(rm *)'),
    });
    expect(codexSettingsFor(lists(['file_change'], [], ['file_change(*.lock)']), false).sandbox).toBe('read-only');
    // Autonomous: nobody is asked, so an ask rule limits nothing.
    expect(codexSettingsFor(lists(['file_change'], [], ['command_execution']), true).sandbox).toBe('workspace-write');
    // A rule about another tool does not matter.
    expect(codexSettingsFor(lists(['file_change'], ['Bash']), false).sandbox).toBe('workspace-write');
  });

  it('approvals are always on-request: Codex asks to leave its sandbox', () => {
    expect(codexSettingsFor(lists(['*']), true).approvalPolicy).toBe('on-request');
  });
});
