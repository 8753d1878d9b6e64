import { SANDBOX_PATHS } from '../sandbox-layout.js';
import { madeBefore, type SpawnStep } from '../spawn-step.js';

/** Step 4: the agent's working directory. */
export const prepareWorkspace: SpawnStep = {
  number: '4',
  name: 'prepare_workspace',
  async run(spawn) {
    const box = madeBefore(spawn, 'sandbox');
    const made = await box.exec(['mkdir', '-p', box.resolvePath(SANDBOX_PATHS.workspace)]);
    if (made.code !== 0) throw new Error(`mkdir ${SANDBOX_PATHS.workspace} exited with ${made.code}: ${made.stderr.trim()}`);
  },
};
