import { readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { MODEL_PROXY_ROUTES, priceOf, type ModelApi, type ModelProxyRoute } from '@svc/protocol';
import { DEFAULT_RESERVED_OUTPUT_TOKENS, MAX_REQUEST_BYTES, prepareRequestBody, readRequestBody, type ModelRequestBody } from './request-body.js';

const route = (api: ModelApi, path: string): ModelProxyRoute => MODEL_PROXY_ROUTES[api].find((candidate) => candidate.path === path)!;
const json = (value: unknown) => Buffer.from(JSON.stringify(value));
const prepared = (api: ModelApi, path: string, body: Buffer) => prepareRequestBody(api, route(api, path), body) as ModelRequestBody;
const forwarded = (api: ModelApi, path: string, body: unknown) => JSON.parse(prepared(api, path, json(body)).bytes.toString()) as Record<string, unknown>;
const refusalOf = (api: ModelApi, path: string, body: unknown) => prepareRequestBody(api, route(api, path), json(body));
/** A refusal's reason starts with the field it names. */
const naming = (field: string) => expect.stringMatching(new RegExp(`^${field.replace(/[[\].]/g, '\\$&')} `));

/** What the real CLIs sent, recorded against a stand-in (recorded-requests/*.json). */
interface Recorded {
  requests: Array<{ what: string; expect: 'pass' | 'refused'; path: string; body: Record<string, unknown> }>;
}
const recorded = (file: string) => JSON.parse(readFileSync(new URL(`./recorded-requests/${file}`, import.meta.url), 'utf8')) as Recorded;

describe('model proxy request body — reservations', () => {
  it("Anthropic: the request's max_tokens plus its input estimated at a token per 4 bytes, priced at its model", () => {
    const raw = json({ model: 'claude-sonnet-4-5', max_tokens: 1000, stream: true, messages: [{ role: 'user', content: 'x'.repeat(3000) }] });
    const body = prepared('anthropic', '/v1/messages', raw);
    const input = Math.ceil(raw.length / 4);
    expect(body).toMatchObject({ model: 'claude-sonnet-4-5', streamed: true, estimatedInputTokens: input, outputCap: 1000 });
    expect(body.reservation.tokens).toBe(input + 1000);
    expect(body.reservation.cost_usd).toBeCloseTo((input * 3 + 1000 * 15) / 1e6, 12);
    // The body goes on as it was checked.
    expect(body.bytes.equals(raw)).toBe(true);
  });

  it("OpenAI: the Responses API's max_output_tokens, Chat Completions' max_completion_tokens or max_tokens; none named: the default", () => {
    expect(prepared('openai', '/v1/responses', json({ model: 'gpt-5', max_output_tokens: 500 })).outputCap).toBe(500);
    expect(prepared('openai', '/v1/chat/completions', json({ model: 'gpt-5', max_completion_tokens: 700, max_tokens: 9 })).outputCap).toBe(700);
    expect(prepared('openai', '/v1/chat/completions', json({ model: 'gpt-5', max_tokens: 9 })).outputCap).toBe(9);
    const codex = prepared('openai', '/v1/responses', json({ model: 'gpt-5.5', stream: true, input: [] }));
    expect(codex.outputCap).toBe(DEFAULT_RESERVED_OUTPUT_TOKENS);
    expect(codex.reservation.cost_usd).toBeCloseTo(
      (codex.estimatedInputTokens * priceOf('openai', 'gpt-5.5').input + DEFAULT_RESERVED_OUTPUT_TOKENS * 10) / 1e6,
      12,
    );
    // Nonsense caps are not caps.
    expect(prepared('anthropic', '/v1/messages', json({ max_tokens: -5 })).outputCap).toBe(DEFAULT_RESERVED_OUTPUT_TOKENS);
    expect(prepared('anthropic', '/v1/messages', json({ max_tokens: '100' })).outputCap).toBe(DEFAULT_RESERVED_OUTPUT_TOKENS);
  });

  it('counting tokens costs none and holds nothing', () => {
    expect(prepared('anthropic', '/v1/messages/count_tokens', json({ model: 'claude-sonnet-4-5', messages: [] }))).toMatchObject({
      costsTokens: false,
      reservation: { tokens: 0, cost_usd: 0 },
    });
    expect(prepared('anthropic', '/v1/messages', json({ model: 'claude-sonnet-4-5', messages: [] }))).toMatchObject({ costsTokens: true });
  });
});

describe('model proxy request body — what goes upstream', () => {
  it('a streamed Chat Completions request is asked for its usage, keeping its other stream options', () => {
    const body = prepared(
      'openai',
      '/v1/chat/completions',
      json({ model: 'gpt-5', stream: true, stream_options: { include_obfuscation: false }, messages: [] }),
    );
    expect(JSON.parse(body.bytes.toString())).toEqual({
      model: 'gpt-5',
      stream: true,
      stream_options: { include_obfuscation: false, include_usage: true },
      messages: [],
    });
    // An agent's include_usage: false does not survive.
    const refused = prepared('openai', '/v1/chat/completions', json({ stream: true, stream_options: { include_usage: false } }));
    expect(JSON.parse(refused.bytes.toString())).toMatchObject({ stream_options: { include_usage: true } });
  });

  it('a non-streamed Chat Completions request goes on as it came; a Responses request with store: false, whatever it said', () => {
    const whole = { model: 'gpt-5', messages: [{ role: 'user', content: 'hi' }] };
    expect(forwarded('openai', '/v1/chat/completions', whole)).toEqual(whole);
    expect(forwarded('openai', '/v1/responses', { model: 'gpt-5', stream: true, input: [] })).toEqual({
      model: 'gpt-5',
      stream: true,
      input: [],
      store: false,
    });
    expect(forwarded('openai', '/v1/responses', { model: 'gpt-5', store: true, input: 'hi' })).toEqual({ model: 'gpt-5', store: false, input: 'hi' });
    // A stored chat completion is not kept either.
    expect(forwarded('openai', '/v1/chat/completions', { ...whole, store: true })).toEqual({ ...whole, store: false });
  });

  it('what goes upstream is the body as checked: a duplicate key is sent once, as the check read it', () => {
    // JSON.parse keeps the last of two keys; an upstream might keep the first (an MCP tool here).
    const raw = Buffer.from('{"model":"gpt-5","tools":[{"type":"mcp","server_url":"https://attacker.example"}],"tools":[],"stream":false,"stream":true}');
    const body = prepared('openai', '/v1/chat/completions', raw);
    expect(JSON.parse(body.bytes.toString())).toEqual({ model: 'gpt-5', tools: [], stream: true, stream_options: { include_usage: true } });
    expect(body.bytes.toString()).not.toContain('attacker');
    expect(body.streamed).toBe(true);
  });

  it('a stream or background flag that is not true or false is refused as invalid, not guessed at', () => {
    for (const value of [1, 'true', 'false', 0, null, {}])
      expect(refusalOf('anthropic', '/v1/messages', { model: 'm', stream: value, messages: [] }), JSON.stringify(value)).toEqual({
        refusal: { kind: 'invalid', field: 'stream', reason: expect.stringContaining('is not true or false') },
      });
    expect(refusalOf('openai', '/v1/responses', { model: 'm', background: 'true' })).toMatchObject({ refusal: { kind: 'invalid', field: 'background' } });
  });

  it('a Responses request in the background, or reading a stored response or conversation, is refused', () => {
    const responses = route('openai', '/v1/responses');
    expect(prepareRequestBody('openai', responses, json({ model: 'gpt-5', background: true }))).toEqual({
      refusal: { kind: 'not_allowed', field: 'background', reason: expect.stringMatching(/^background is not passed: .* could not be metered$/) },
    });
    expect(prepareRequestBody('openai', responses, json({ model: 'gpt-5', previous_response_id: 'resp_other' }))).toMatchObject({
      refusal: { kind: 'not_allowed', reason: expect.stringContaining('previous_response_id is not passed') },
    });
    expect(prepareRequestBody('openai', responses, json({ model: 'gpt-5', conversation: 'conv_other' }))).toMatchObject({
      refusal: { kind: 'not_allowed', reason: expect.stringContaining('conversation is not passed') },
    });
    // What Codex sends passes.
    expect(prepareRequestBody('openai', responses, json({ model: 'gpt-5.5', stream: true, store: false, background: false, input: [] }))).toHaveProperty(
      'bytes',
    );
  });

  it('a body that is not a JSON object is refused as invalid', () => {
    expect(prepareRequestBody('anthropic', route('anthropic', '/v1/messages'), Buffer.from('{"model":'))).toEqual({
      refusal: { kind: 'invalid', reason: 'the request body is not JSON' },
    });
    expect(prepareRequestBody('openai', route('openai', '/v1/responses'), Buffer.from('[1,2]'))).toEqual({
      refusal: { kind: 'invalid', reason: 'the request body is not a JSON object' },
    });
  });

  it('a body larger than the limit is refused as too large, the rest unread', async () => {
    expect(await readRequestBody(Readable.from([Buffer.alloc(6), Buffer.alloc(6)]), undefined, 10)).toEqual({
      refusal: { kind: 'too_large', reason: 'the request body is larger than the model proxy reads (10 bytes)' },
    });
    expect(await readRequestBody(Readable.from([Buffer.from('{"a"'), Buffer.from(':1}')]), '7', 10)).toEqual(Buffer.from('{"a":1}'));
  });

  it('a body whose content-length is past the limit is refused before a byte of it is read', async () => {
    let read = false;
    const never = new Readable({
      read() {
        read = true;
      },
    });
    expect(await readRequestBody(never, String(MAX_REQUEST_BYTES + 1))).toMatchObject({ refusal: { kind: 'too_large' } });
    expect(read).toBe(false);
    // The limit sits between the gateway's body limit (4 MiB) and Anthropic's own (32 MiB).
    expect(MAX_REQUEST_BYTES).toBe(16 * 1024 * 1024);
  });

  it('a body cut short (the agent went away) is refused as invalid', async () => {
    const broken = new Readable({ read() {} });
    broken.push(Buffer.from('{"model":'));
    setImmediate(() => broken.destroy(new Error('aborted')));
    expect(await readRequestBody(broken, undefined)).toEqual({ refusal: { kind: 'invalid', reason: 'the request body was cut short' } });
  });
});

describe("model proxy request body — the real CLIs' requests", () => {
  it('Claude Code 2.1.330 and 2.1.197: every turn recorded passes as it was sent; the WebSearch tool’s own request (a server tool) is refused', () => {
    for (const file of ['claude-code-2.1.330.json', 'claude-code-2.1.197.json'])
      for (const request of recorded(file).requests) {
        const checked = prepareRequestBody('anthropic', route('anthropic', request.path), json(request.body));
        if (request.expect === 'refused') {
          expect(checked, request.what).toEqual({
            refusal: { kind: 'not_allowed', field: 'tools[0].type', reason: expect.stringContaining('"web_search_20250305" is not passed') },
          });
          continue;
        }
        expect(checked, `${file}: ${request.what}`).toHaveProperty('bytes');
        expect(JSON.parse((checked as ModelRequestBody).bytes.toString()), request.what).toEqual(request.body);
      }
  });

  it('Codex 0.169.0: every turn recorded passes, with its web_search tool dropped and store: false; its own tools kept', () => {
    for (const request of recorded('codex-0.169.0.json').requests) {
      const body = forwarded('openai', request.path, request.body);
      const sentTools = request.body['tools'] as Array<{ type: string }>;
      expect(sentTools.some((tool) => tool.type === 'web_search')).toBe(true);
      expect(body).toEqual({ ...request.body, store: false, tools: sentTools.filter((tool) => tool.type !== 'web_search') });
      expect((body['tools'] as Array<{ type: string }>).map((tool) => tool.type)).toEqual(expect.arrayContaining(['function', 'custom', 'tool_search']));
    }
  });
});

/** A one-message Anthropic request whose user message holds `blocks`. */
const anthropicWith = (blocks: unknown[], extra: Record<string, unknown> = {}) => ({
  model: 'claude-sonnet-4-5',
  max_tokens: 100,
  messages: [{ role: 'user', content: blocks }],
  ...extra,
});
const png = { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' };

describe('model proxy request body — Anthropic: the agent’s own tools, inline content', () => {
  it('refuses each feature that has the provider fetch, search, run code, call MCP servers or read stored files, naming the field', () => {
    const cases: Array<[string, unknown, string]> = [
      [
        'an image from a URL',
        anthropicWith([{ type: 'image', source: { type: 'url', url: 'https://attacker.example/?d=secret' } }]),
        'messages[0].content[0].source.type',
      ],
      [
        'a document from a URL',
        anthropicWith([{ type: 'document', source: { type: 'url', url: 'https://attacker.example/a.pdf' } }]),
        'messages[0].content[0].source.type',
      ],
      ['a stored file', anthropicWith([{ type: 'document', source: { type: 'file', file_id: 'file_other' } }]), 'messages[0].content[0].source.type'],
      ['an image without a source', anthropicWith([{ type: 'image' }]), 'messages[0].content[0].source'],
      [
        'a URL image inside a tool result',
        anthropicWith([{ type: 'tool_result', tool_use_id: 't1', content: [{ type: 'image', source: { type: 'url', url: 'https://attacker.example/' } }] }]),
        'messages[0].content[0].content[0].source.type',
      ],
      [
        'a URL image inside a document made of content',
        anthropicWith([{ type: 'document', source: { type: 'content', content: [{ type: 'image', source: { type: 'url', url: 'https://a.example/' } }] } }]),
        'messages[0].content[0].source.content[0].source.type',
      ],
      ['a container upload', anthropicWith([{ type: 'container_upload', file_id: 'file_other' }]), 'messages[0].content[0].type'],
      ['a server tool use in the history', anthropicWith([{ type: 'server_tool_use', id: 's', name: 'web_search', input: {} }]), 'messages[0].content[0].type'],
      ['an image in the system prompt', anthropicWith([], { system: [{ type: 'image', source: png }] }), 'system[0].type'],
      [
        'web search',
        anthropicWith([], {
          tools: [
            { name: 'Bash', input_schema: {} },
            { type: 'web_search_20250305', name: 'web_search' },
          ],
        }),
        'tools[1].type',
      ],
      ['web fetch', anthropicWith([], { tools: [{ type: 'web_fetch_20250910', name: 'web_fetch' }] }), 'tools[0].type'],
      ['code execution', anthropicWith([], { tools: [{ type: 'code_execution_20250825', name: 'code_execution' }] }), 'tools[0].type'],
      ['an MCP toolset', anthropicWith([], { tools: [{ type: 'mcp_toolset', mcp_server_name: 'x' }] }), 'tools[0].type'],
      ["Anthropic's bash tool", anthropicWith([], { tools: [{ type: 'bash_20250124', name: 'bash' }] }), 'tools[0].type'],
      ['the MCP connector', anthropicWith([], { mcp_servers: [{ type: 'url', url: 'https://attacker.example/mcp', name: 'x' }] }), 'mcp_servers'],
      ['a container', anthropicWith([], { container: 'container_other' }), 'container'],
      ['a field not on the list', anthropicWith([], { betas_from_the_future: true }), 'betas_from_the_future'],
    ];
    for (const [what, body, field] of cases) {
      const checked = refusalOf('anthropic', '/v1/messages', body);
      expect(checked, what).toEqual({ refusal: { kind: 'not_allowed', field, reason: naming(field) } });
    }
    // count_tokens is held to the same rules.
    expect(
      refusalOf('anthropic', '/v1/messages/count_tokens', anthropicWith([], { tools: [{ type: 'web_search_20250305', name: 'web_search' }] })),
    ).toMatchObject({
      refusal: { field: 'tools[0].type' },
    });
    // The refusal says why, and what passes.
    expect(refusalOf('anthropic', '/v1/messages', cases[0]![1])).toMatchObject({ refusal: { reason: expect.stringContaining('the provider would fetch it') } });
    expect(refusalOf('anthropic', '/v1/messages', cases[9]![1])).toMatchObject({
      refusal: { reason: expect.stringContaining("only the agent's own tools are passed") },
    });
  });

  it('passes inline content and the agent’s own tools: base64 images, text and content documents, tool results, thinking, tool references, custom tools', () => {
    const body = anthropicWith(
      [
        { type: 'text', text: 'look', cache_control: { type: 'ephemeral' } },
        { type: 'image', source: png },
        { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' } },
        { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'notes' }, citations: { enabled: true } },
        {
          type: 'document',
          source: {
            type: 'content',
            content: [
              { type: 'text', text: 'a' },
              { type: 'image', source: png },
            ],
          },
        },
        {
          type: 'tool_result',
          tool_use_id: 't1',
          content: [
            { type: 'text', text: 'ok' },
            { type: 'image', source: png },
            { type: 'tool_reference', tool_name: 'WebFetch' },
          ],
        },
        { type: 'tool_result', tool_use_id: 't2', content: 'plain', is_error: true },
        { type: 'search_result', source: 'notes.md', title: 'Notes', content: [{ type: 'text', text: 'found' }] },
      ],
      {
        system: [{ type: 'text', text: 'be brief' }],
        tools: [
          { name: 'Bash', description: 'shell', input_schema: { type: 'object' } },
          { type: 'custom', name: 'Mine', input_schema: { type: 'object' } },
        ],
        thinking: { type: 'adaptive' },
        stream: true,
      },
    );
    body.messages.push({
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'hm', signature: 's' },
        { type: 'redacted_thinking', data: 'x' },
        { type: 'tool_use', id: 't3', name: 'Bash', input: { url: 'https://example.com' } },
      ],
    } as never);
    expect(forwarded('anthropic', '/v1/messages', body)).toEqual(body);
  });
});

/** A Responses request whose input is `input`. */
const responsesWith = (input: unknown[], extra: Record<string, unknown> = {}) => ({ model: 'gpt-5', stream: true, input, ...extra });
const dataUrl = 'data:image/png;base64,iVBORw0KGgo=';

describe('model proxy request body — OpenAI: the agent’s own tools, inline content, nothing stored', () => {
  it('Responses: refuses hosted tools, remote or stored inputs, stored prompts and items, naming the field', () => {
    const userImage = (part: Record<string, unknown>) => responsesWith([{ type: 'message', role: 'user', content: [{ type: 'input_image', ...part }] }]);
    const cases: Array<[string, unknown, string]> = [
      ['an MCP server', responsesWith([], { tools: [{ type: 'mcp', server_label: 'x', server_url: 'https://attacker.example/mcp' }] }), 'tools[0].type'],
      ['file search', responsesWith([], { tools: [{ type: 'file_search', vector_store_ids: ['vs_other'] }] }), 'tools[0].type'],
      ['a code interpreter container', responsesWith([], { tools: [{ type: 'code_interpreter', container: 'cntr_other' }] }), 'tools[0].type'],
      ['image generation', responsesWith([], { tools: [{ type: 'image_generation' }] }), 'tools[0].type'],
      ['a computer', responsesWith([], { tools: [{ type: 'computer_use_preview' }] }), 'tools[0].type'],
      ['a hosted shell', responsesWith([], { tools: [{ type: 'shell', environment: { type: 'container_auto' } }] }), 'tools[0].type'],
      ['a tool search the provider runs', responsesWith([], { tools: [{ type: 'tool_search', execution: 'server' }] }), 'tools[0].execution'],
      [
        'an MCP server in a namespace',
        responsesWith([], { tools: [{ type: 'namespace', name: 'n', tools: [{ type: 'mcp', server_url: 'https://a.example' }] }] }),
        'tools[0].tools[0].type',
      ],
      ['a hosted tool forced', responsesWith([], { tool_choice: { type: 'file_search' } }), 'tool_choice.type'],
      [
        'a hosted tool allowed',
        responsesWith([], { tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [{ type: 'mcp', server_label: 'x' }] } }),
        'tool_choice.tools[0].type',
      ],
      ['an image from a URL', userImage({ image_url: 'https://attacker.example/?d=secret' }), 'input[0].content[0].image_url'],
      ['a stored image', userImage({ file_id: 'file_other' }), 'input[0].content[0].file_id'],
      [
        'a file from a URL',
        responsesWith([{ role: 'user', content: [{ type: 'input_file', file_url: 'https://a.example/x.pdf' }] }]),
        'input[0].content[0].file_url',
      ],
      ['a stored file', responsesWith([{ role: 'user', content: [{ type: 'input_file', file_id: 'file_other' }] }]), 'input[0].content[0].file_id'],
      [
        'a URL image in a tool output',
        responsesWith([{ type: 'function_call_output', call_id: 'c', output: [{ type: 'input_image', image_url: 'http://a.example/' }] }]),
        'input[0].output[0].image_url',
      ],
      ['an item reference', responsesWith([{ type: 'item_reference', id: 'msg_other' }]), 'input[0].type'],
      ['a reasoning item read by its id', responsesWith([{ type: 'reasoning', id: 'rs_other', summary: [] }]), 'input[0].encrypted_content'],
      ['a web search call', responsesWith([{ type: 'web_search_call', id: 'ws_1', status: 'completed' }]), 'input[0].type'],
      [
        'an MCP tool smuggled in a tool search output',
        responsesWith([{ type: 'tool_search_output', call_id: 'c', tools: [{ type: 'mcp', server_url: 'https://a.example' }] }]),
        'input[0].tools[0].type',
      ],
      ['a stored prompt', responsesWith([], { prompt: { id: 'pmpt_other' } }), 'prompt'],
      ['a previous response', responsesWith([], { previous_response_id: 'resp_other' }), 'previous_response_id'],
      ['a conversation', responsesWith([], { conversation: 'conv_other' }), 'conversation'],
      ['instructions that are not text', responsesWith([], { instructions: [{ type: 'item_reference', id: 'x' }] }), 'instructions'],
      ['a field not on the list', responsesWith([], { attachments: [] }), 'attachments'],
    ];
    for (const [what, body, field] of cases)
      expect(refusalOf('openai', '/v1/responses', body), what).toEqual({ refusal: { kind: 'not_allowed', field, reason: naming(field) } });
  });

  it('Responses: passes inline images and files, the agent’s own tools and its own items; web_search tools are dropped', () => {
    const input = [
      { role: 'user', content: 'hi' },
      {
        type: 'message',
        role: 'user',
        content: [
          { type: 'input_text', text: 'look' },
          { type: 'input_image', image_url: dataUrl, detail: 'auto' },
        ],
      },
      { type: 'message', role: 'user', content: [{ type: 'input_file', filename: 'a.pdf', file_data: 'data:application/pdf;base64,JVBERi0=' }] },
      { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'gAAAA' },
      { type: 'function_call', call_id: 'c1', name: 'view_image', arguments: '{"path":"https://example.com"}' },
      { type: 'function_call_output', call_id: 'c1', output: [{ type: 'input_image', image_url: dataUrl }] },
      { type: 'custom_tool_call', call_id: 'c2', name: 'apply_patch', input: '*** Begin Patch' },
      { type: 'custom_tool_call_output', call_id: 'c2', output: 'done' },
      { type: 'local_shell_call', call_id: 'c3', action: { type: 'exec', command: ['ls'] }, status: 'completed' },
      { type: 'local_shell_call_output', call_id: 'c3', output: 'a' },
      { type: 'tool_search_call', call_id: 'c4', execution: 'client', arguments: {} },
      { type: 'tool_search_output', call_id: 'c4', execution: 'client', tools: [{ type: 'function', name: 'f', parameters: {} }] },
      { type: 'compaction', encrypted_content: 'gAAAA' },
    ];
    const tools = [
      { type: 'function', name: 'exec_command', parameters: {} },
      { type: 'custom', name: 'apply_patch', format: { type: 'grammar' } },
      { type: 'local_shell' },
      { type: 'tool_search', execution: 'client', parameters: {} },
      { type: 'namespace', name: 'mcp__docs', tools: [{ type: 'function', name: 'search', parameters: {} }] },
      { type: 'web_search', external_web_access: true },
      { type: 'web_search_preview' },
    ];
    const body = responsesWith(input, { tools, tool_choice: { type: 'function', name: 'exec_command' }, include: ['reasoning.encrypted_content'] });
    expect(forwarded('openai', '/v1/responses', body)).toEqual({ ...body, tools: tools.slice(0, 5), store: false });
  });

  it('Chat Completions: refuses remote images, stored files and audio, hosted tools and web search options; passes data: images', () => {
    const userParts = (parts: unknown[]) => ({ model: 'gpt-5', messages: [{ role: 'user', content: parts }] });
    const cases: Array<[string, unknown, string]> = [
      [
        'an image from a URL',
        userParts([{ type: 'image_url', image_url: { url: 'https://attacker.example/?d=secret' } }]),
        'messages[0].content[0].image_url.url',
      ],
      ['a stored file', userParts([{ type: 'file', file: { file_id: 'file_other' } }]), 'messages[0].content[0].file.file_id'],
      ['stored audio', { model: 'gpt-5', messages: [{ role: 'assistant', audio: { id: 'audio_other' } }] }, 'messages[0].audio'],
      ['a hosted tool', { model: 'gpt-5', messages: [], tools: [{ type: 'web_search' }] }, 'tools[0].type'],
      ['web search options', { model: 'gpt-5', messages: [], web_search_options: {} }, 'web_search_options'],
    ];
    for (const [what, body, field] of cases)
      expect(refusalOf('openai', '/v1/chat/completions', body), what).toEqual({ refusal: { kind: 'not_allowed', field, reason: naming(field) } });
    const passes = userParts([
      { type: 'text', text: 'look' },
      { type: 'image_url', image_url: { url: dataUrl, detail: 'low' } },
      { type: 'file', file: { filename: 'a.pdf', file_data: 'data:application/pdf;base64,JVBERi0=' } },
    ]);
    const withTools = {
      ...passes,
      tools: [{ type: 'function', function: { name: 'f', parameters: {} } }],
      tool_choice: { type: 'function', function: { name: 'f' } },
    };
    expect(forwarded('openai', '/v1/chat/completions', withTools)).toEqual(withTools);
  });
});

describe('model proxy request body — what makes a request the same one asked again', () => {
  const messages = [{ role: 'user', content: 'hello' }];
  const tool = (description: string) => ({ name: 'Bash', description, input_schema: { type: 'object' } });
  const reAsk = (body: Record<string, unknown>) => prepared('anthropic', '/v1/messages', json(body)).reAsk;
  const base = {
    model: 'claude-opus-4-8',
    max_tokens: 100,
    stream: true,
    system: 'You are Opus 4.8 (1M context).',
    tools: [tool('Runs a command.')],
    messages,
  };

  it('the same route, model, conversation, settings and tool names: the same, whatever the system prompt, metadata and the tools’ descriptions say', () => {
    expect(reAsk(base)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(reAsk({ ...base, system: 'You are Opus 4.8.', tools: [tool('Runs a shell command.')], metadata: { user_id: 'u' } })).toBe(reAsk(base));
  });

  it('another conversation, model, streaming, setting or tool: another request', () => {
    const digests = [
      reAsk(base),
      reAsk({ ...base, messages: [{ role: 'user', content: 'hello!' }] }),
      reAsk({ ...base, model: 'claude-haiku-4-5' }),
      reAsk({ ...base, stream: false }),
      reAsk({ ...base, max_tokens: 200 }),
      reAsk({ ...base, tools: [{ ...tool('Runs a command.'), name: 'Shell' }] }),
    ];
    expect(new Set(digests).size).toBe(digests.length);
  });

  it('Gemini by its contents and function names, the Responses API by its input; a token count is never asked again', () => {
    const gemini = (name: string) =>
      (
        prepareRequestBody(
          'gemini',
          route('gemini', '/v1beta/models/{model}:generateContent'),
          json({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }], tools: [{ functionDeclarations: [{ name }] }] }),
          'gemini-3-pro',
        ) as ModelRequestBody
      ).reAsk;
    expect(gemini('read_file')).toBe(gemini('read_file'));
    expect(gemini('read_file')).not.toBe(gemini('write_file'));
    const responses = (input: string) => prepared('openai', '/v1/responses', json({ model: 'gpt-5.5', input })).reAsk;
    expect(responses('a')).not.toBe(responses('b'));

    expect(prepared('anthropic', '/v1/messages/count_tokens', json({ model: 'claude-opus-4-8', messages })).reAsk).toBeUndefined();
  });
});
