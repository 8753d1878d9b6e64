import type { CodedError } from '@svc/protocol';
import type { GroupMembers } from '../src/templates/approval-routes.js';
import { parseTemplate } from '../src/templates/template.js';

/** The error a template's text is refused with (as `templates/t.toml`); fails the test if it is accepted. */
export function templateRefusal(text: string, groups?: GroupMembers): CodedError {
  try {
    parseTemplate('t', text, 'templates/t.toml', groups);
  } catch (err) {
    return err as CodedError;
  }
  throw new Error('the template was accepted');
}

/** The built-in templates a person talks to (conversations; only admins may make them autonomous). */
export const INTERACTIVE_BUILT_INS = ['claude', 'codex', 'demo', 'gemini', 'claude-acp', 'codex-acp', 'opencode'] as const;
