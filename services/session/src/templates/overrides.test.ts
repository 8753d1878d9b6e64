import { describe, expect, it } from 'vitest';
import { CodedError, statusOfErrorCode, type CreateSessionBodyType } from '@svc/protocol';
import { createTemplateCatalog } from './catalog.js';
import { INTERACTIVE_BUILT_INS } from '../../test/template-refusal.js';
import { checkOverrides, withWorkspaceOverrides } from './overrides.js';
import { parseTemplate, type Template } from './template.js';

const templateWith = (overrides: string, autonomous = false) =>
  parseTemplate('t', `[agent]\ncommand = "/bin/echo"\n[sidecar]\nadapter = "generic"\nautonomous = ${autonomous}\n${overrides}`, 'templates/t.toml');
const person = { admin: false };
const admin = { admin: true };
const autonomousOn: CreateSessionBodyType = { template: 't', overrides: { autonomous: true } };

function refusal(template: Template, body: CreateSessionBodyType, caller: { admin: boolean }): CodedError {
  try {
    checkOverrides(template, body, caller);
  } catch (err) {
    return err as CodedError;
  }
  throw new Error('the overrides were accepted');
}

describe('session overrides — who may turn autonomous mode on', () => {
  it('the built-in templates let only admins turn it on: anyone else is refused with 403 forbidden naming the template and the key', async () => {
    const catalog = createTemplateCatalog({});
    for (const name of INTERACTIVE_BUILT_INS) {
      const template = await catalog.load(name);
      const err = refusal(template, { template: name, overrides: { autonomous: true } }, person);
      expect(err).toBeInstanceOf(CodedError);
      expect(err.code).toBe('forbidden');
      expect(statusOfErrorCode(err.code)).toBe(403);
      expect(err.message).toBe(
        `template ${name} lets only admins set overrides.autonomous (its [overrides] autonomous = "admins"): start the session without it, and people decide what the agent asks`,
      );
      expect(err.details).toEqual({ template: name, key: 'overrides.autonomous', permitted: 'admins' });
      expect(() => checkOverrides(template, { template: name, overrides: { autonomous: true } }, admin)).not.toThrow();
    }
  });

  it('a template without [overrides] is admins-only; "anyone" lets everyone; "nobody" refuses admins too', () => {
    expect(refusal(templateWith(''), autonomousOn, person).message).toMatch(/^template t lets only admins set overrides\.autonomous/);
    expect(() => checkOverrides(templateWith(''), autonomousOn, admin)).not.toThrow();
    expect(() => checkOverrides(templateWith('[overrides]\nautonomous = "anyone"\n'), autonomousOn, person)).not.toThrow();
    const nobody = refusal(templateWith('[overrides]\nautonomous = "nobody"\n'), autonomousOn, admin);
    expect(nobody.message).toMatch(/^template t lets nobody set overrides\.autonomous \(its \[overrides\] autonomous = "nobody"\)/);
    expect(nobody.details).toMatchObject({ permitted: 'nobody' });
  });

  it("what does not loosen the template is anyone's: turning it off, naming what an autonomous template says, other overrides, no sidecar", () => {
    const nobody = '[overrides]\nautonomous = "nobody"\n';
    expect(() => checkOverrides(templateWith(nobody), { template: 't', overrides: { autonomous: false } }, person)).not.toThrow();
    expect(() => checkOverrides(templateWith(nobody, true), autonomousOn, person)).not.toThrow();
    expect(() => checkOverrides(templateWith(nobody), { template: 't', overrides: { env: { A: 'b' } } }, person)).not.toThrow();
    expect(() => checkOverrides(templateWith(nobody), { template: 't' }, person)).not.toThrow();
    const bare = parseTemplate('t', '[agent]\ncommand = "/bin/echo"\n[overrides]\nautonomous = "nobody"\n', 'x');
    expect(() => checkOverrides(bare, autonomousOn, person)).not.toThrow();
  });
});

/** What a call threw. */
function thrown(call: () => void): CodedError {
  try {
    call();
  } catch (err) {
    return err as CodedError;
  }
  throw new Error('the overrides were accepted');
}

describe('session overrides — the workspace', () => {
  const withRepo = (overrides = '') =>
    parseTemplate(
      't',
      `[agent]\ncommand = "/bin/echo"\n[workspace]\nrepo = "https://git.example.com/acme/app.git"\nref = "main"\n[sidecar]\nadapter = "generic"\n${overrides}`,
      'templates/t.toml',
    );
  const asking = (workspace: NonNullable<NonNullable<CreateSessionBodyType['overrides']>['workspace']>): CreateSessionBodyType => ({
    template: 't',
    overrides: { workspace },
  });

  it('ref and branch are anyone’s by default; the session runs the template with them', () => {
    const body = asking({ ref: 'release-2', branch: 'fix-42' });
    checkOverrides(withRepo(), body, { admin: false });
    expect(withWorkspaceOverrides(withRepo(), body).workspace).toEqual({ repo: 'https://git.example.com/acme/app.git', ref: 'release-2', branch: 'fix-42' });
  });

  it('another repository is nobody’s by default (it would be cloned with the control plane’s token), an admin’s or anyone’s where the template says so', () => {
    const body = asking({ repo: 'https://git.example.com/acme/secret.git' });
    expect(thrown(() => checkOverrides(withRepo(), body, { admin: true }))).toMatchObject({
      code: 'forbidden',
      details: { key: 'overrides.workspace.repo', permitted: 'nobody' },
    });
    expect(thrown(() => checkOverrides(withRepo('[overrides]\nworkspace_repo = "admins"'), body, { admin: false }))).toMatchObject({ code: 'forbidden' });
    checkOverrides(withRepo('[overrides]\nworkspace_repo = "admins"'), body, { admin: true });
    expect(thrown(() => checkOverrides(withRepo('[overrides]\nworkspace_ref = "nobody"'), asking({ ref: 'x' }), { admin: true }))).toMatchObject({
      details: { key: 'overrides.workspace.ref' },
    });
  });

  it('refused: a repository holding a password, a template without [workspace]', () => {
    const open = withRepo('[overrides]\nworkspace_repo = "anyone"');
    expect(thrown(() => checkOverrides(open, asking({ repo: 'https://user:pw@git.example.com/x.git' }), { admin: false }))).toMatchObject({
      code: 'invalid_request',
      message: expect.stringContaining('/body/overrides/workspace/repo'),
    });
    expect(thrown(() => checkOverrides(templateWith(''), asking({ ref: 'x' }), { admin: false }))).toMatchObject({ code: 'invalid_request' });
  });
});
