import { SANDBOX_PATHS } from '../sandbox-layout.js';
import { madeBefore, type SpawnStep } from '../spawn-step.js';

/** Step 6, the credential proxy's part here: the worker's token, readable by the sandbox only. */
export const credentialProxy: SpawnStep = {
  number: '6',
  name: 'credential_proxy',
  async run(spawn) {
    await madeBefore(spawn, 'sandbox').upload(SANDBOX_PATHS.token, Buffer.from(`${spawn.request.token}\n`), 0o600);
    return { path: SANDBOX_PATHS.token };
  },
};
