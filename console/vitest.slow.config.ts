import { mergeConfig } from 'vitest/config';
import { sharedTestConfig } from '../vitest.shared.js';

// `npm run test:slow`: the console against a real agent (e2e/slow/), kept out of `npm test` (docs/testing.md).
// Each file in a process of its own: these suites kill and restart what they start, and last
// minutes each, so importing afresh costs little (docs/testing.md).
const config = mergeConfig(sharedTestConfig, { test: { fileParallelism: false, isolate: true, outputFile: { json: 'test-results/vitest-slow.json' } } });
// Set, not merged: mergeConfig would add this to the shared include and run every suite.
config.test!.include = ['e2e/slow/**/*.test.ts'];
export default config;
