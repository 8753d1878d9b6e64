import type { ModelApi, ModelProxyRoute } from '@svc/protocol';
import {
  arrayAt,
  isObject,
  objectAt,
  quote,
  refuse,
  Refused,
  typeOf,
  WHY_REMOTE,
  WHY_SERVER_TOOL,
  WHY_STORED,
  type BodyPolicy,
  type BodyRefusal,
  type Json,
} from './body-checks.js';
import { GEMINI_POLICY } from './gemini-body-policy.js';

/**
 * What a model request's body may hold (docs/model-proxy.md, "What passes"): inference on what
 * the request itself carries, and nothing that has the provider reach out (fetch a URL, search
 * the web, call an MCP server, run code in its containers) or read what the key stored (files,
 * vector stores, stored prompts, responses, items). Each route's fields, tool types, content and
 * item types are allow-lists: what is not listed is refused, naming the field.
 */

// ── Anthropic Messages ────────────────────────────────────────────────────────────────────────

/** The fields of a Messages request (count_tokens takes a subset of them). */
const ANTHROPIC_FIELDS: ReadonlySet<string> = new Set([
  'model',
  'messages',
  'system',
  'max_tokens',
  'metadata',
  'stop_sequences',
  'stream',
  'temperature',
  'top_p',
  'top_k',
  'tools',
  'tool_choice',
  'thinking',
  'service_tier',
  'context_management',
  'output_config',
  'output_format',
]);
const ANTHROPIC_REFUSED_FIELDS: Readonly<Record<string, string>> = {
  mcp_servers: "the MCP connector has Anthropic's servers call MCP servers",
  container: "a code-execution container holds files and state under the control plane's key",
};

/** The blocks of a message, of a tool result, and of a document made of content. */
const MESSAGE_BLOCKS: ReadonlySet<string> = new Set(['text', 'image', 'document', 'search_result', 'tool_use', 'tool_result', 'thinking', 'redacted_thinking']);
const TOOL_RESULT_BLOCKS: ReadonlySet<string> = new Set(['text', 'image', 'document', 'search_result', 'tool_reference']);
const DOCUMENT_CONTENT_BLOCKS: ReadonlySet<string> = new Set(['text', 'image']);
const TEXT_BLOCKS: ReadonlySet<string> = new Set(['text']);
/** Inline sources: the data is in the request (a `url` is fetched by the provider, a `file` read from what the key stored). */
const IMAGE_SOURCES: ReadonlySet<string> = new Set(['base64']);
const DOCUMENT_SOURCES: ReadonlySet<string> = new Set(['base64', 'text', 'content']);

/** A `content` (a string, or a list of blocks of the given types), checked in depth. */
function checkAnthropicContent(content: unknown, field: string, passed: ReadonlySet<string>): void {
  if (typeof content === 'string') return;
  arrayAt(content, field).forEach((item, index) => {
    const at = `${field}[${index}]`;
    const block = objectAt(item, at);
    const type = typeOf(block, at, passed);
    if (type === 'image')
      typeOf(
        objectAt(block['source'], `${at}.source`),
        `${at}.source`,
        IMAGE_SOURCES,
        `is not passed: ${WHY_REMOTE}, or read a file stored under the key; only inline sources are`,
      );
    if (type === 'document') {
      const source = objectAt(block['source'], `${at}.source`);
      const kind = typeOf(
        source,
        `${at}.source`,
        DOCUMENT_SOURCES,
        `is not passed: ${WHY_REMOTE}, or read a file stored under the key; only inline sources are`,
      );
      if (kind === 'content') checkAnthropicContent(source['content'], `${at}.source.content`, DOCUMENT_CONTENT_BLOCKS);
    }
    if (type === 'tool_result' && block['content'] !== undefined) checkAnthropicContent(block['content'], `${at}.content`, TOOL_RESULT_BLOCKS);
    if (type === 'search_result') checkAnthropicContent(block['content'], `${at}.content`, TEXT_BLOCKS);
  });
}

function checkAnthropic(body: Json): Json {
  if (body['system'] !== undefined) checkAnthropicContent(body['system'], 'system', TEXT_BLOCKS);
  arrayAt(body['messages'] ?? [], 'messages').forEach((item, index) => {
    const message = objectAt(item, `messages[${index}]`);
    checkAnthropicContent(message['content'], `messages[${index}].content`, MESSAGE_BLOCKS);
  });
  // The agent's own tools have no type, or "custom"; every other type is Anthropic's (server
  // tools such as web_search_*, web_fetch_*, code_execution_*, mcp_toolset) or one of its
  // client tools the CLIs do not use (bash_*, text_editor_*, computer_*).
  arrayAt(body['tools'] ?? [], 'tools').forEach((item, index) => {
    const tool = objectAt(item, `tools[${index}]`);
    if (tool['type'] !== undefined && tool['type'] !== null && tool['type'] !== 'custom')
      refuse(`tools[${index}].type`, `${quote(tool['type'])} is not passed: ${WHY_SERVER_TOOL}`);
  });
  return body;
}

// ── OpenAI Responses ──────────────────────────────────────────────────────────────────────────

const RESPONSES_FIELDS: ReadonlySet<string> = new Set([
  'model',
  'input',
  'instructions',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'max_tool_calls',
  'reasoning',
  'store',
  'stream',
  'stream_options',
  'include',
  'prompt_cache_key',
  'prompt_cache_retention',
  'text',
  'metadata',
  'client_metadata',
  'max_output_tokens',
  'temperature',
  'top_p',
  'top_logprobs',
  'truncation',
  'service_tier',
  'safety_identifier',
  'user',
  'context_management',
  'background',
]);
const RESPONSES_REFUSED_FIELDS: Readonly<Record<string, string>> = {
  previous_response_id: WHY_STORED,
  conversation: WHY_STORED,
  prompt: `a stored prompt: ${WHY_STORED}`,
};

/**
 * Tools the agent runs itself: functions, custom (freeform) tools, Codex's `local_shell`, its
 * client-side `tool_search`, and namespaces of these. A `web_search*` tool is dropped, not
 * refused (Codex 0.169.0 sends one on every turn); every other type runs at the provider.
 */
const RESPONSES_TOOLS: ReadonlySet<string> = new Set(['function', 'custom', 'local_shell', 'tool_search', 'namespace']);
const NAMESPACE_TOOLS: ReadonlySet<string> = new Set(['function', 'custom']);
const isWebSearch = (tool: unknown) => isObject(tool) && typeof tool['type'] === 'string' && tool['type'].startsWith('web_search');

function checkResponsesTools(tools: unknown[], field: string): void {
  tools.forEach((item, index) => {
    const at = `${field}[${index}]`;
    const tool = objectAt(item, at);
    const type = typeOf(tool, at, RESPONSES_TOOLS, `is not passed: ${WHY_SERVER_TOOL}`);
    if (type === 'tool_search' && tool['execution'] !== 'client')
      refuse(`${at}.execution`, `${quote(tool['execution'])} is not passed: only a tool search the agent runs ("client") is`);
    if (type === 'namespace')
      arrayAt(tool['tools'] ?? [], `${at}.tools`).forEach((inner, innerIndex) =>
        typeOf(objectAt(inner, `${at}.tools[${innerIndex}]`), `${at}.tools[${innerIndex}]`, NAMESPACE_TOOLS, `is not passed: ${WHY_SERVER_TOOL}`),
      );
  });
}

/** A tool choice names one of the passed tools, or none. */
function checkToolChoice(choice: unknown, passed: ReadonlySet<string>): void {
  if (choice === undefined || choice === null || typeof choice === 'string') return;
  const object = objectAt(choice, 'tool_choice');
  const type = typeOf(object, 'tool_choice', new Set([...passed, 'allowed_tools']), `is not passed: ${WHY_SERVER_TOOL}`);
  if (type === 'allowed_tools')
    arrayAt(object['tools'] ?? [], 'tool_choice.tools').forEach((tool, index) =>
      typeOf(objectAt(tool, `tool_choice.tools[${index}]`), `tool_choice.tools[${index}]`, passed, `is not passed: ${WHY_SERVER_TOOL}`),
    );
}

const RESPONSES_PARTS: ReadonlySet<string> = new Set(['input_text', 'output_text', 'refusal', 'input_image', 'input_file']);
const RESPONSES_OUTPUT_PARTS: ReadonlySet<string> = new Set(['input_text', 'input_image', 'input_file']);

/** An image only as a `data:` URL, a file only as `file_data`: nothing fetched, nothing read from the key's files. */
function checkOpenAIImage(url: unknown, fileId: unknown, field: string): void {
  if (fileId !== undefined && fileId !== null) refuse(`${field}.file_id`, `is not passed (an image stored under the key): ${WHY_STORED}`);
  if (typeof url !== 'string' || !url.startsWith('data:'))
    refuse(`${field}.image_url`, `${quote(url)} is not passed: ${WHY_REMOTE}; only an inline data: URL is`);
}
function checkOpenAIFile(file: Json, field: string): void {
  if (file['file_id'] !== undefined && file['file_id'] !== null) refuse(`${field}.file_id`, `is not passed (a file stored under the key): ${WHY_STORED}`);
  if (file['file_url'] !== undefined && file['file_url'] !== null) refuse(`${field}.file_url`, `is not passed: ${WHY_REMOTE}; only inline file_data is`);
  if (typeof file['file_data'] !== 'string') refuse(`${field}.file_data`, 'is missing: a file is passed only inline, as file_data');
}

function checkResponsesParts(content: unknown, field: string, passed: ReadonlySet<string>): void {
  if (typeof content === 'string') return;
  arrayAt(content, field).forEach((item, index) => {
    const at = `${field}[${index}]`;
    const part = objectAt(item, at);
    const type = typeOf(part, at, passed);
    if (type === 'input_image') checkOpenAIImage(part['image_url'], part['file_id'], at);
    if (type === 'input_file') checkOpenAIFile(part, at);
  });
}

/**
 * Input items the agent's own conversation holds: messages, its tools' calls and outputs,
 * reasoning it carries itself (`encrypted_content`), compactions. An `item_reference`, or a
 * reasoning item without its content, would be read from what the key stored.
 */
const RESPONSES_ITEMS: ReadonlySet<string> = new Set([
  'message',
  'function_call',
  'function_call_output',
  'custom_tool_call',
  'custom_tool_call_output',
  'local_shell_call',
  'local_shell_call_output',
  'tool_search_call',
  'tool_search_output',
  'reasoning',
  'compaction',
]);

function checkResponsesInput(input: unknown): void {
  if (input === undefined || typeof input === 'string') return;
  arrayAt(input, 'input').forEach((entry, index) => {
    const at = `input[${index}]`;
    const item = objectAt(entry, at);
    // A message may leave out its type ({role, content}).
    const type = item['type'] === undefined && item['role'] !== undefined ? 'message' : item['type'];
    if (type === 'item_reference') refuse(`${at}.type`, `"item_reference" is not passed: ${WHY_STORED}`);
    typeOf({ type }, at, RESPONSES_ITEMS);
    if (type === 'message') checkResponsesParts(item['content'], `${at}.content`, RESPONSES_PARTS);
    if (type === 'function_call_output' || type === 'custom_tool_call_output') checkResponsesParts(item['output'], `${at}.output`, RESPONSES_OUTPUT_PARTS);
    if (type === 'tool_search_output') checkResponsesTools(arrayAt(item['tools'] ?? [], `${at}.tools`), `${at}.tools`);
    if (type === 'reasoning' && typeof item['encrypted_content'] !== 'string')
      refuse(`${at}.encrypted_content`, `is missing: a reasoning item without its encrypted content is read by its id, and ${WHY_STORED}`);
  });
}

function checkResponses(body: Json): Json {
  if (body['background'] === true) refuse('background', 'is not passed: a background response runs on after its answer, where it could not be metered');
  if (body['instructions'] !== undefined && body['instructions'] !== null && typeof body['instructions'] !== 'string')
    refuse('instructions', 'are passed only as text');
  checkResponsesInput(body['input']);
  const tools = arrayAt(body['tools'] ?? [], 'tools');
  const kept = tools.filter((tool) => !isWebSearch(tool));
  checkResponsesTools(kept, 'tools');
  checkToolChoice(body['tool_choice'], NAMESPACE_TOOLS);
  // Nothing stays under the key for another holder to read (the API stores by default).
  return { ...body, ...(body['tools'] !== undefined ? { tools: kept } : {}), store: false };
}

// ── OpenAI Chat Completions ───────────────────────────────────────────────────────────────────

const CHAT_FIELDS: ReadonlySet<string> = new Set([
  'model',
  'messages',
  'stream',
  'stream_options',
  'max_tokens',
  'max_completion_tokens',
  'temperature',
  'top_p',
  'n',
  'stop',
  'presence_penalty',
  'frequency_penalty',
  'logit_bias',
  'logprobs',
  'top_logprobs',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'functions',
  'function_call',
  'response_format',
  'seed',
  'user',
  'safety_identifier',
  'prompt_cache_key',
  'prompt_cache_retention',
  'reasoning_effort',
  'verbosity',
  'service_tier',
  'metadata',
  'store',
  'modalities',
  'audio',
  'prediction',
]);
const CHAT_REFUSED_FIELDS: Readonly<Record<string, string>> = {
  web_search_options: 'it has the provider search the web',
};
const CHAT_PARTS: ReadonlySet<string> = new Set(['text', 'image_url', 'input_audio', 'file', 'refusal']);

function checkChat(body: Json): Json {
  arrayAt(body['messages'] ?? [], 'messages').forEach((entry, index) => {
    const at = `messages[${index}]`;
    const message = objectAt(entry, at);
    // An assistant message's `audio: {id}` names an earlier audio answer the provider kept.
    if (message['audio'] !== undefined && message['audio'] !== null) refuse(`${at}.audio`, `is not passed: ${WHY_STORED}`);
    const content = message['content'];
    if (content === undefined || content === null || typeof content === 'string') return;
    arrayAt(content, `${at}.content`).forEach((item, partIndex) => {
      const partAt = `${at}.content[${partIndex}]`;
      const part = objectAt(item, partAt);
      const type = typeOf(part, partAt, CHAT_PARTS);
      if (type === 'image_url') {
        const image = objectAt(part['image_url'], `${partAt}.image_url`);
        if (typeof image['url'] !== 'string' || !image['url'].startsWith('data:'))
          refuse(`${partAt}.image_url.url`, `${quote(image['url'])} is not passed: ${WHY_REMOTE}; only an inline data: URL is`);
      }
      if (type === 'file') checkOpenAIFile(objectAt(part['file'], `${partAt}.file`), `${partAt}.file`);
    });
  });
  arrayAt(body['tools'] ?? [], 'tools').forEach((item, index) =>
    typeOf(objectAt(item, `tools[${index}]`), `tools[${index}]`, NAMESPACE_TOOLS, `is not passed: ${WHY_SERVER_TOOL}`),
  );
  checkToolChoice(body['tool_choice'], NAMESPACE_TOOLS);
  const rewritten: Json = { ...body };
  // A stored completion stays under the key for another holder to read.
  if (body['store'] !== undefined) rewritten['store'] = false;
  // OpenAI leaves the usage out of a stream unless asked; the agent's other options are kept.
  if (body['stream'] === true) rewritten['stream_options'] = { ...(isObject(body['stream_options']) ? body['stream_options'] : {}), include_usage: true };
  return rewritten;
}

// ── The routes ────────────────────────────────────────────────────────────────────────────────

const POLICIES: Readonly<Record<string, BodyPolicy>> = {
  'anthropic /v1/messages': { fields: ANTHROPIC_FIELDS, refused: ANTHROPIC_REFUSED_FIELDS, check: checkAnthropic },
  'anthropic /v1/messages/count_tokens': { fields: ANTHROPIC_FIELDS, refused: ANTHROPIC_REFUSED_FIELDS, check: checkAnthropic },
  'openai /v1/responses': { fields: RESPONSES_FIELDS, refused: RESPONSES_REFUSED_FIELDS, check: checkResponses },
  'openai /v1/chat/completions': { fields: CHAT_FIELDS, refused: CHAT_REFUSED_FIELDS, check: checkChat },
  'gemini /v1beta/models/{model}:streamGenerateContent': GEMINI_POLICY.generate,
  'gemini /v1beta/models/{model}:generateContent': GEMINI_POLICY.generate,
  'gemini /v1beta/models/{model}:countTokens': GEMINI_POLICY.count,
  'gemini /v1/models/{model}:streamGenerateContent': GEMINI_POLICY.generate,
  'gemini /v1/models/{model}:generateContent': GEMINI_POLICY.generate,
  'gemini /v1/models/{model}:countTokens': GEMINI_POLICY.count,
};

/** Flags the upstream reads as booleans: anything else is refused, not guessed at. */
const BOOLEAN_FIELDS = ['stream', 'background'] as const;

/**
 * Checks a request body (a parsed JSON object) against its route's allow-lists and returns the
 * body to forward: on the Responses API with `store: false` and without `web_search*` tools; a
 * streamed Chat Completions request with `stream_options.include_usage`. Or the first field
 * that is not passed.
 */
export function checkRequestBody(api: ModelApi, route: ModelProxyRoute, body: Json): { body: Json } | { refusal: BodyRefusal } {
  const policy = POLICIES[`${api} ${route.path}`];
  if (!policy) return { refusal: { kind: 'not_allowed', field: '', reason: `${route.method} ${route.path} takes no body the proxy knows` } };
  try {
    for (const field of BOOLEAN_FIELDS)
      if (body[field] !== undefined && typeof body[field] !== 'boolean')
        throw new Refused(field, `${field} ${quote(body[field])} is not true or false`, 'invalid');
    for (const field of Object.keys(body)) {
      const why = policy.refused[field];
      if (why !== undefined) {
        if (body[field] === undefined || body[field] === null) continue;
        refuse(field, `is not passed: ${why}`);
      }
      if (!policy.fields.has(field)) refuse(field, `is not a field the proxy passes on ${route.method} ${route.path} (docs/model-proxy.md)`);
    }
    return { body: policy.check(body) };
  } catch (err) {
    if (!(err instanceof Refused)) throw err;
    return { refusal: { kind: err.kind, field: err.field, reason: err.reason } };
  }
}
