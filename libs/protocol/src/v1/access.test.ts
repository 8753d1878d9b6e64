import { describe, expect, it } from 'vitest';
import { principalsOf, roleIncludes, roleOf, type AccessEntry } from './access.js';

const access: AccessEntry[] = [
  { principal: 'group:payments', role: 'approver' },
  { principal: 'user:bob', role: 'viewer' },
  { principal: 'group:release', role: 'operator' },
];
const person = (sub: string, groups: string[] = [], admin = false) => ({ sub, groups, admin });

describe('roles on a shared session (docs/teams.md)', () => {
  it('the owner and admins are its admins; a person the list names has the highest role any entry naming them gives; anyone else none', () => {
    expect(roleOf(person('alice'), { owner: 'alice', access })).toBe('admin');
    expect(roleOf(person('root', [], true), { owner: 'alice', access })).toBe('admin');
    expect(roleOf(person('bob', ['payments', 'release']), { owner: 'alice', access })).toBe('operator');
    expect(roleOf(person('bob'), { owner: 'alice', access })).toBe('viewer');
    expect(roleOf(person('dave', ['payments']), { owner: 'alice', access })).toBe('approver');
    expect(roleOf(person('carol', ['marketing']), { owner: 'alice', access })).toBeUndefined();
    expect(roleOf(person('carol'), { owner: 'alice' })).toBeUndefined();
    // A group named like a user, or the reverse, names nobody else.
    expect(roleOf(person('payments'), { owner: 'alice', access })).toBeUndefined();
    expect(roleOf(person('x', ['bob']), { owner: 'alice', access })).toBeUndefined();
  });

  it('each role includes the ones before it', () => {
    expect(roleIncludes('operator', 'approver')).toBe(true);
    expect(roleIncludes('approver', 'operator')).toBe(false);
    expect(roleIncludes('viewer', 'viewer')).toBe(true);
    expect(roleIncludes('admin', 'operator')).toBe(true);
  });

  it('a person is looked up by their user principal and one per group', () => {
    expect(principalsOf({ sub: 'bob', groups: ['payments', 'release'] })).toEqual(['user:bob', 'group:payments', 'group:release']);
  });
});
