import { describe, expect, it } from 'vitest';
import { lintAsIf } from '@svc/test-support/lint';

describe('sidecar — module boundaries', () => {
  it.each(['@svc/store', '@svc/bus'])('importing %s fails lint', async (imported) => {
    const rules = await lintAsIf('sidecar/src/forbidden.ts', `import * as forbidden from '${imported}';\nexport const x = forbidden;\n`);
    expect(rules).toContain('@nx/enforce-module-boundaries');
  });

  it('importing the protocol is allowed', async () => {
    const rules = await lintAsIf('sidecar/src/allowed.ts', `import { EVENT_TYPES } from '@svc/protocol';\nexport const x = EVENT_TYPES;\n`);
    expect(rules).toEqual([]);
  });
});
