import { describeConfig, loadSidecarConfig, SidecarConfigError } from './config.js';
import { runDemoAgent } from './demo-agent.js';
import { runSidecar } from './runner.js';

const warn = (message: string) => process.stderr.write(`svc-sidecar: ${message}\n`);

// No top-level await: the single executable embeds this as a CommonJS script.
async function main(): Promise<number> {
  // `svc-sidecar demo-agent` is the demo's agent. Run as Claude Code, it gets the CLI's flags
  // before its own arguments (`-p --input-format stream-json … demo-agent`), so look at them all.
  if (process.argv.slice(2).includes('demo-agent')) return runDemoAgent();
  try {
    const config = await loadSidecarConfig();
    warn(`starting: ${JSON.stringify(describeConfig(config))}`);
    const run = await runSidecar(config, warn);
    for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => run.terminate());
    return await run.exited;
  } catch (err) {
    warn(err instanceof SidecarConfigError ? `bad config: ${err.message}` : String((err as Error).stack ?? err));
    return 2;
  }
}

void main().then((code) => (process.exitCode = code));
