import { baseEnv, resolveCommand } from '../sandbox-layout.js';
import { madeBefore, type SkippedStep, type SpawnStep } from '../spawn-step.js';

/** Step 6.5 for a template without `[sidecar]`: nothing to deploy. */
export const sidecarSkipped: SkippedStep = { number: '6.5', name: 'sidecar', skipped: 'the template has no [sidecar] section' };

/** Step 6.5 without a sidecar: the agent's command itself, in the background, with exactly its environment. */
export const startAgent: SpawnStep = {
  number: '6.5',
  name: 'start_agent',
  async run(spawn) {
    const box = madeBefore(spawn, 'sandbox');
    const { agent } = spawn.request.template;
    await box.startBackground([resolveCommand(box, agent.command), ...agent.args], baseEnv(box, spawn.deps.sandboxPath, madeBefore(spawn, 'agentEnv')));
  },
};
