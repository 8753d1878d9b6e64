import type { SpawnStep } from '../spawn-step.js';

/** Step 3: the provider makes the sandbox, and the session keeps its handle (another replica can find it again). */
export const createSandbox: SpawnStep = {
  number: '3',
  name: 'create_sandbox',
  async run(spawn) {
    const { deps, request, ids } = spawn;
    const made = await deps.provider.create({ workerId: ids.workerId, image: request.template.agent.image, sealed: request.template.sandbox.sealed });
    spawn.made.sandbox = made;
    await deps.store.setSandbox(ids.sessionId, made.handle);
    return {
      provider: made.handle.provider,
      ...(made.handle.provider === 'local' ? { isolation: made.handle.isolation, sealed: made.handle.sealed ?? false } : { pod: made.handle.pod }),
    };
  },
  undo: {
    what: 'destroy the sandbox',
    async run(spawn) {
      await spawn.made.sandbox?.destroy(spawn.deps.killGraceMs);
    },
  },
};
