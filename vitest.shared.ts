// Shared Vitest settings: tests import workspace packages from their TypeScript source
// (the "@svc/source" export condition), so no build is needed before a test run.
import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

// Without Vite's "module" condition, packages resolve as Node resolves them when the services run:
// some packages' "module" builds (@opentelemetry/api's) are meant for bundlers only.
const conditions = ['@svc/source', ...defaultServerConditions.filter((condition) => condition !== 'module')];

export const sharedTestConfig = defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    include: ['src/**/*.test.ts', 'src/**/*.test.tsx', 'e2e/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // One process runs a project's files one after another, importing each module once: on two
    // cores, importing the services afresh for every file was a third of `npm test` (docs/testing.md).
    isolate: false,
    // The JSON report lets CI print one "N passed, N failed" line for the whole workspace.
    reporters: ['default', 'json'],
    outputFile: { json: 'test-results/vitest.json' },
  },
});
