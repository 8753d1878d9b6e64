import { mergeConfig } from 'vitest/config';
import { sharedTestConfig } from '../vitest.shared.js';

/** The console's tests drive a real Chromium against the local stack (e2e/): one file at a time; e2e/slow/ is `npm run test:slow`'s. */
export default mergeConfig(sharedTestConfig, { test: { fileParallelism: false, exclude: ['**/node_modules/**', 'e2e/slow/**'] } });
