import type { AgentLaunch } from './adapter.js';

/** The name of the model provider the sidecar defines for Codex when its model proxy serves the OpenAI API. */
const CODEX_PROXY_PROVIDER = 'svc';

/**
 * Codex's config overrides (`-c`, before the subcommand) that point it at the sidecar's model
 * proxy: a `svc` provider speaking the Responses API at the proxy's base URL, whose key is the
 * placeholder in `OPENAI_API_KEY`, and no server-side web search. Nothing when the worker's model
 * traffic is not proxied.
 */
export function codexProviderArgs(launch: AgentLaunch): string[] {
  const baseUrl = launch.modelBaseUrls?.openai;
  if (!baseUrl) return [];
  const provider = `{ name = "svc model proxy", base_url = ${JSON.stringify(baseUrl)}, wire_api = "responses", env_key = "OPENAI_API_KEY" }`;
  // Server-side web search would reach the web around the egress decisions; the model proxy drops
  // the tool anyway (docs/model-proxy.md), so Codex is told not to offer it.
  return ['-c', `model_provider="${CODEX_PROXY_PROVIDER}"`, '-c', `model_providers.${CODEX_PROXY_PROVIDER}=${provider}`, '-c', 'web_search="disabled"'];
}
