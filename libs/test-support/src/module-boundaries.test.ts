import { describe, expect, it } from 'vitest';
import { lintAsIf } from './lint.js';

const RULE = '@nx/enforce-module-boundaries';

describe('module boundaries — the architecture is enforced by lint', () => {
  it.each([
    ['libs/protocol depends on nothing of ours', 'libs/protocol/src/v1/forbidden.ts', '@svc/service-kit'],
    ['a lib never imports a service', 'libs/store/src/forbidden.ts', '@svc/control'],
    ['a service never imports another service', 'services/gateway/src/forbidden.ts', '@svc/session'],
    ['shared libs never import server infrastructure', 'libs/service-kit/src/forbidden.ts', '@svc/bus'],
  ])('%s', async (_title, file, imported) => {
    expect(await lintAsIf(file, `import * as forbidden from '${imported}';\nexport const x = forbidden;\n`)).toContain(RULE);
  });

  it.each([
    ['a service imports libs', 'services/gateway/src/allowed.ts', '@svc/bus'],
    ['protocol is importable from a shared lib', 'libs/auth/src/allowed.ts', '@svc/protocol'],
  ])('allowed: %s', async (_title, file, imported) => {
    expect(await lintAsIf(file, `import * as allowed from '${imported}';\nexport const x = allowed;\n`)).not.toContain(RULE);
  });
});
