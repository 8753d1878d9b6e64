import { describe, expect, it } from 'vitest';
import { CodedError, statusOfErrorCode, type CreateSessionBodyType } from '@svc/protocol';
import { createTemplateCatalog } from './catalog.js';
import { checkOverrides } from './overrides.js';
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
    for (const name of ['claude', 'codex', 'demo']) {
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
