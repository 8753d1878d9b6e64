import { setSessionStatus } from '../../session-status.js';
import type { SpawnStep } from '../spawn-step.js';

/** Step 7: the session is running. The agent may already have finished (a very short run): then its end status stands. */
export const finalize: SpawnStep = {
  number: '7',
  name: 'finalize',
  async run(spawn) {
    await setSessionStatus(spawn.deps, spawn.ids, 'running');
  },
};
