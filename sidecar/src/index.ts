/** svc-sidecar: the agent's process manager inside the sandbox (docs/sidecar.md). */
export * from './adapters/adapter.js';
export { claudeCodeAdapter } from './adapters/claude-code.js';
export * from './config.js';
export { createControlPlaneClient } from './http-client.js';
export { startModelProxy } from './model-proxy.js';
