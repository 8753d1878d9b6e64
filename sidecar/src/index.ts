/** svc-sidecar: the agent's process manager inside the sandbox (docs/sidecar.md). */
export * from './adapters/adapter.js';
export { claudeCodeAdapter } from './adapters/claude-code.js';
export { genericAdapter } from './adapters/generic.js';
export * from './config.js';
export * from './permissions.js';
export { runSidecar, type SidecarRun } from './runner.js';
export { createControlPlaneClient, type ControlPlaneClient } from './http-client.js';
export { startModelProxy, type ModelProxy } from './model-proxy.js';
