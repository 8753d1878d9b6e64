import { describe, expect, it } from 'vitest';
import { lintAsIf } from '@svc/test-support/lint';

describe('gateway — module boundaries', () => {
  it('importing the store fails lint: the gateway reaches the services over the bus, never the database', async () => {
    const rules = await lintAsIf('services/gateway/src/forbidden.ts', `import { createEventStore } from '@svc/store';\nexport const x = createEventStore;\n`);
    expect(rules).toContain('@nx/enforce-module-boundaries');
  });

  it('importing the bus and the protocol is allowed', async () => {
    const rules = await lintAsIf(
      'services/gateway/src/allowed.ts',
      `import { requestJson } from '@svc/bus';\nimport { EVENT_TYPES } from '@svc/protocol';\nexport const x = [requestJson, EVENT_TYPES];\n`,
    );
    expect(rules).toEqual([]);
  });
});
