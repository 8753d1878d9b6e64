import Type, { type Static } from 'typebox';
import { createChecker, describeFieldErrors } from '@svc/protocol';
import { jsonObjectSetting, type Setting } from '@svc/service-kit';

const LocalUser = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
    groups: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 256 }), { maxItems: 256 })),
  },
  { additionalProperties: false },
);
const LocalUsers = Type.Record(Type.String({ pattern: '^[A-Za-z0-9._@-]{1,256}$' }), LocalUser, { additionalProperties: false });
export type LocalUsers = Static<typeof LocalUsers>;
const isLocalUsers = createChecker<LocalUsers>(LocalUsers);

/**
 * `SVC_LOCAL_USERS`: people the built-in issuer may sign in besides the local user, as a team's
 * demo and tests need (docs/teams.md) — `{"alice": {"groups": ["payments"]}, …}`. None is an admin.
 */
export const localUsersSetting: Setting<LocalUsers> = {
  variable: 'SVC_LOCAL_USERS',
  read(raw) {
    let parsed: Record<string, unknown> | undefined;
    try {
      parsed = jsonObjectSetting('SVC_LOCAL_USERS', raw, 'user → {name?, groups?}, {"alice": {"groups": ["payments"]}}');
    } catch (err) {
      return { problem: (err as Error).message };
    }
    const checked = isLocalUsers.check(parsed ?? {}, '/SVC_LOCAL_USERS');
    return checked.ok ? { value: checked.value } : { problem: `SVC_LOCAL_USERS: ${describeFieldErrors(checked.errors)}` };
  },
};
