import { mergeConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

// `npm run test:slow`: the suites that take minutes (chaos, a NATS cluster, real agents, a silent
// network, a pooler), kept out of `npm test` (docs/testing.md).
export default mergeConfig(sharedTestConfig, {
  test: { include: ['src/slow/**/*.test.ts'], outputFile: { json: 'test-results/vitest-slow.json' } },
});
