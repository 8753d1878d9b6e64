import { mergeConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

// `npm run test:slow`: the suites that take minutes (chaos, a NATS cluster, real agents, a silent
// network, a pooler), kept out of `npm test` (docs/testing.md).
// Each file in a process of its own: these suites kill and restart what they start, and last
// minutes each, so importing afresh costs little (docs/testing.md).
const config = mergeConfig(sharedTestConfig, { test: { isolate: true, outputFile: { json: 'test-results/vitest-slow.json' } } });
// Set, not merged: mergeConfig would add this to the shared include and run every suite.
config.test!.include = ['src/slow/**/*.test.ts'];
export default config;
