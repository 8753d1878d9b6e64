import { describeConfig, loadSidecarConfig, SidecarConfigError } from './config.js';
import { runSidecar } from './runner.js';

const warn = (message: string) => process.stderr.write(`svc-sidecar: ${message}\n`);

try {
  const config = await loadSidecarConfig();
  warn(`starting: ${JSON.stringify(describeConfig(config))}`);
  const run = runSidecar(config, warn);
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => run.terminate());
  process.exitCode = await run.exited;
} catch (err) {
  warn(err instanceof SidecarConfigError ? `bad config: ${err.message}` : String((err as Error).stack ?? err));
  process.exitCode = 2;
}
