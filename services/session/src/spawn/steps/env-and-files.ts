import { madeBefore, type SpawnStep } from '../spawn-step.js';

/**
 * Step 5: the template's files, and the agent's environment: the template's `env`, the
 * `pass_env` variables the session service has, then the request's `overrides.env`.
 */
export const envAndFiles: SpawnStep = {
  number: '5',
  name: 'env_and_files',
  async run(spawn) {
    const box = madeBefore(spawn, 'sandbox');
    const { template, body } = spawn.request;
    const { hostEnv } = spawn.deps;
    for (const file of template.files) await box.upload(file.path, Buffer.from(file.content), file.mode);
    const passed = Object.fromEntries(
      [...template.agent.pass_env, ...template.agent.pass_env_optional].flatMap((name) => (hostEnv[name] === undefined ? [] : [[name, hostEnv[name]!]])),
    );
    const env: Record<string, string> = { ...template.agent.env, ...passed, ...(body.overrides?.env ?? {}) };
    spawn.made.agentEnv = env;
    return { files: template.files.map((f) => f.path), env: Object.keys(env) };
  },
};
