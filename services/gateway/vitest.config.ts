import { mergeConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

// `npm test`: every suite but the soak-like ones in src/slow/ (vitest.slow.config.ts, `npm run test:slow`).
export default mergeConfig(sharedTestConfig, { test: { exclude: ['src/slow/**', '**/node_modules/**'] } });
