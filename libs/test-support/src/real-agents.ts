import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseToml } from 'smol-toml';

const WORKSPACE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const PINNED = readFileSync(path.join(WORKSPACE, '.ci/versions.env'), 'utf8');

/** The Claude Code releases to test, from the one place that pins them (.ci/versions.env). */
export const CLAUDE_CODE_VERSIONS = /CLAUDE_CODE_VERSIONS="([^"]+)"/.exec(PINNED)![1]!.split(' ');
/** The Codex release to test. */
export const CODEX_VERSION = /CODEX_VERSION=(\S+)/.exec(PINNED)![1]!;

/** The ACP agents' releases (`GEMINI_CLI_VERSION`, …). */
const pinned = (name: string): string => new RegExp(`${name}=(\\S+)`).exec(PINNED)![1]!;

function installed(name: string, bin = name.startsWith('codex') ? 'codex' : 'claude'): string {
  const binary = path.join(WORKSPACE, `.cache/agents/${name}/node_modules/.bin/${bin}`);
  if (!existsSync(binary)) throw new Error(`${name} is not installed at ${binary}; run: bash deploy/dev-setup.sh`);
  return binary;
}

export const claudeBinary = (version: string): string => installed(`claude-code-${version}`);
export const codexBinary = (): string => installed(`codex-${CODEX_VERSION}`);
export const geminiBinary = (): string => installed(`gemini-cli-${pinned('GEMINI_CLI_VERSION')}`, 'gemini');
export const claudeAcpBinary = (): string => installed(`claude-agent-acp-${pinned('CLAUDE_AGENT_ACP_VERSION')}`, 'claude-agent-acp');
/** The native codex-acp (its npm launcher does not pass signals on). */
export const codexAcpBinary = (): string => installed(`codex-acp-${pinned('CODEX_ACP_VERSION')}`, 'codex-acp-linux-x64');
export const opencodeBinary = (): string => installed(`opencode-${pinned('OPENCODE_VERSION')}`, 'opencode');

/** What keeps Claude Code's own traffic to the model: no update checks, telemetry, error reports. */
const CLAUDE_QUIET_ENV = {
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  DISABLE_AUTOUPDATER: '1',
  DISABLE_TELEMETRY: '1',
  DISABLE_ERROR_REPORTING: '1',
} as const;

/** The sidecar config's `agent` for the real Claude Code against a model stand-in at `baseUrl`, its HOME in `home`. */
export function claudeAgent(options: { version: string; cwd: string; home: string; baseUrl: string; prompt: string }) {
  return {
    command: claudeBinary(options.version),
    cwd: options.cwd,
    prompt: options.prompt,
    env: {
      HOME: options.home,
      ANTHROPIC_BASE_URL: options.baseUrl,
      ANTHROPIC_API_KEY: 'sk-test',
      ...CLAUDE_QUIET_ENV,
      CLAUDE_CODE_TMPDIR: options.home,
      // As root the CLI refuses some modes unless it is told it runs in a sandbox.
      IS_SANDBOX: '1',
    },
  };
}

/**
 * The sidecar config's `agent` for the real Codex against a Responses API stand-in at `baseUrl`
 * (../shared/AGENTS.md): its `CODEX_HOME` (which must not be under /tmp) gets a config.toml with
 * a `mock` provider that retries once, and `gpt-5.5`, a model in Codex's catalog.
 */
export async function codexAgent(options: { cwd: string; home: string; baseUrl: string; prompt: string; args?: string[] }) {
  await Promise.all([options.cwd, options.home].map((dir) => mkdir(dir, { recursive: true })));
  await writeFile(
    path.join(options.home, 'config.toml'),
    [
      'model = "gpt-5.5"',
      'model_provider = "mock"',
      'check_for_update_on_startup = false',
      '',
      '[model_providers.mock]',
      'name = "Mock OpenAI"',
      `base_url = "${options.baseUrl}"`,
      'wire_api = "responses"',
      'env_key = "OPENAI_API_KEY"',
      'request_max_retries = 1',
      'stream_max_retries = 1',
      '',
    ].join('\n'),
  );
  return {
    command: codexBinary(),
    args: options.args ?? [],
    cwd: options.cwd,
    prompt: options.prompt,
    env: { CODEX_HOME: options.home, OPENAI_API_KEY: 'sk-test' },
  };
}

/** A built-in template's agent settings and files, as shipped (the tests run the agents as the templates set them up). */
function builtIn(name: string): { env: Record<string, string>; args: string[]; files: Array<{ path: string; content: string }> } {
  const template = parseToml(readFileSync(path.join(WORKSPACE, `services/session/templates/${name}.toml`), 'utf8')) as {
    agent: { env?: Record<string, string>; args?: string[] };
    files?: Array<{ path: string; content: string }>;
  };
  return { env: template.agent.env ?? {}, args: template.agent.args ?? [], files: template.files ?? [] };
}

/** Writes a template's files under `home` where they go under the sandbox's `/home/agent`. */
async function writeHomeFiles(files: ReadonlyArray<{ path: string; content: string }>, home: string): Promise<void> {
  for (const file of files) {
    if (!file.path.startsWith('/home/agent/')) throw new Error(`${file.path} is not under /home/agent`);
    const target = path.join(home, file.path.slice('/home/agent/'.length));
    await mkdir(path.dirname(target), { recursive: true });
    await writeFile(target, file.content);
  }
}

/** Where a test runs an agent: its workspace, its HOME, its model stand-in, its prompt. */
interface AgentOptions {
  cwd: string;
  home: string;
  baseUrl: string;
  prompt: string;
}

/** The sidecar config's `agent` for a built-in template's agent: its arguments, its environment and its files (under `home`) as shipped, and `env` for the test. */
async function fromTemplate(name: string, command: string, options: AgentOptions, env: Record<string, string>) {
  const template = builtIn(name);
  await mkdir(options.cwd, { recursive: true });
  await writeHomeFiles(template.files, options.home);
  return { command, args: template.args, cwd: options.cwd, prompt: options.prompt, env: { ...template.env, HOME: options.home, ...env } };
}

/**
 * The sidecar config's `agent` for the real Gemini CLI over ACP against a Gemini API stand-in at
 * `baseUrl`, its HOME in `home`, set up as the built-in `gemini` template sets it up (its
 * settings file, its arguments).
 */
export function geminiAgent(options: AgentOptions) {
  return fromTemplate('gemini', geminiBinary(), options, { GEMINI_API_KEY: 'test-key', GOOGLE_GEMINI_BASE_URL: options.baseUrl });
}

/** Claude's ACP build (claude-agent-acp, its own Claude Code inside) against an Anthropic stand-in at `baseUrl`, set up as the built-in `claude-acp` template sets it up. */
export function claudeAcpAgent(options: AgentOptions) {
  // IS_SANDBOX unset, as in a sandbox (this machine sets IS_SANDBOX=yes): with any value it offers its Claude Code the permission bypass.
  return fromTemplate('claude-acp', claudeAcpBinary(), options, { ANTHROPIC_BASE_URL: options.baseUrl, ANTHROPIC_API_KEY: 'sk-test', IS_SANDBOX: '' });
}

/** Codex's ACP build against a Responses API stand-in at `baseUrl`, with the built-in `codex-acp` template's settings (asked before every patch and command). */
export async function codexAcpAgent(options: AgentOptions) {
  const codex = await codexAgent({ ...options, args: builtIn('codex-acp').args });
  return { ...codex, command: codexAcpBinary() };
}

/** OpenCode over ACP (`opencode acp`) against an Anthropic stand-in at `baseUrl`, set up as the built-in `opencode` template sets it up (every tool asked, nothing of its own fetched). */
export function opencodeAgent(options: AgentOptions) {
  return fromTemplate('opencode', opencodeBinary(), options, { ANTHROPIC_BASE_URL: options.baseUrl, ANTHROPIC_API_KEY: 'sk-test' });
}

/**
 * The session service's settings that let local sandboxes run an agent installed under `.cache/agents`:
 * its install directory mounted, its bin directory on the sandbox's PATH.
 */
export function sandboxEnvFor(binary: string): { SVC_SANDBOX_HOST_DIRS: string; SVC_SANDBOX_PATH: string } {
  const installed = path.dirname(path.dirname(path.dirname(binary)));
  return { SVC_SANDBOX_HOST_DIRS: installed, SVC_SANDBOX_PATH: `${path.join(installed, 'node_modules/.bin')}:/usr/local/bin:/usr/bin:/bin` };
}

/** The same for several agents at once: every install directory mounted, every bin directory on the PATH. */
export function sandboxEnvForAll(binaries: readonly string[]): { SVC_SANDBOX_HOST_DIRS: string; SVC_SANDBOX_PATH: string } {
  const each = binaries.map(sandboxEnvFor);
  return {
    SVC_SANDBOX_HOST_DIRS: each.map((env) => env.SVC_SANDBOX_HOST_DIRS).join(','),
    SVC_SANDBOX_PATH: [...new Set(each.flatMap((env) => env.SVC_SANDBOX_PATH.split(':')))].join(':'),
  };
}

/** A template running interactive Codex (app-server) through the model proxy (`gpt-5.5` is in Codex's catalog), with `sections` (TOML) before its `[sidecar]`. */
export function codexTemplate(sections = ''): string {
  return [
    '[agent]',
    'command = "codex"',
    'cwd = "/workspace"',
    'args = ["-c", "model=\\"gpt-5.5\\"", "-c", "check_for_update_on_startup=false"]',
    '[model]',
    'api = "openai"',
    ...(sections ? [sections] : []),
    '[sidecar]',
    'adapter = "codex"',
    '',
  ].join('\n');
}
