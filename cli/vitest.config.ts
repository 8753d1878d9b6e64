import { mergeConfig } from 'vitest/config';
import { sharedTestConfig } from '../vitest.shared.js';

// The screens are asserted as text: no colour codes, whatever the runner's terminal (nx sets
// FORCE_COLOR for the tasks it runs when its own output is a colour terminal).
export default mergeConfig(sharedTestConfig, { test: { env: { FORCE_COLOR: '0' } } });
