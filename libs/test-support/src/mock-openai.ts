import type { ServerResponse } from 'node:http';
import { startModelStandIn, type ModelStandIn } from './model-stand-in.js';

/**
 * One model turn the mock plays: some text, then optionally one tool call — Codex's
 * `exec_command` (a shell command) or its `apply_patch` (a patch in Codex's own format).
 */
export interface ResponsesTurn {
  text: string;
  /** `cmd` runs in a shell; `escalate` asks to run it outside the sandbox (Codex then asks for approval when its policy is on-request). */
  command?: { cmd: string; escalate?: boolean; justification?: string };
  /** The patch text, from `*** Begin Patch` to `*** End Patch` (see `addFilePatch`). */
  patch?: string;
}

/** A patch adding one file, in the format Codex's `apply_patch` tool takes. */
export function addFilePatch(file: string, lines: readonly string[]): string {
  return ['*** Begin Patch', `*** Add File: ${file}`, ...lines.map((line) => `+${line}`), '*** End Patch', ''].join('\n');
}

/** The stand-in; `url` is the `base_url` of a Codex model provider (it ends in /v1). */
export type MockOpenAI = ModelStandIn;

export interface MockOpenAIOptions {
  /**
   * An upstream in trouble: the first model request's stream ends in `response.failed`, and
   * every later request gets HTTP 500.
   */
  failing?: boolean;
  /**
   * Holds a request's answer after its message (`n`: the request's number, from 0), as a model
   * still streaming: `true` until the client goes away (its interrupt), a promise until it settles.
   */
  holdOpen?(body: Record<string, unknown>, n: number): boolean | Promise<void>;
}

function sse(response: ServerResponse, type: string, data: Record<string, unknown>): void {
  response.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
}

/** How many tool outputs the conversation already holds: the index of the turn the model plays next. */
function toolOutputsIn(body: Record<string, unknown>): number {
  const input = Array.isArray(body['input']) ? (body['input'] as Array<{ type?: string }>) : [];
  return input.filter((item) => item.type === 'function_call_output' || item.type === 'custom_tool_call_output').length;
}

const USAGE = {
  input_tokens: 1000,
  input_tokens_details: { cached_tokens: 200 },
  output_tokens: 50,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: 1050,
};

/**
 * A stand-in for the OpenAI Responses API on loopback, for running the real Codex CLI offline
 * (../shared/AGENTS.md: a `mock` model provider with `wire_api = "responses"`): `POST
 * /v1/responses` answers with a streamed (SSE) response. A conversation holding n tool outputs
 * gets `turns[n]` (the last turn once they run out): a script per conversation, whatever
 * else the stand-in serves meanwhile; `holdOpen` keeps an answer streaming.
 */
export async function startMockOpenAI(turns: readonly ResponsesTurn[], options: MockOpenAIOptions = {}): Promise<MockOpenAI> {
  if (turns.length === 0) throw new Error('the OpenAI stand-in needs at least one turn to play');
  let responses = 0;
  return startModelStandIn({
    name: 'OpenAI',
    path: '/v1',
    isModelRequest: (request) => request.method === 'POST' && Boolean(request.url?.endsWith('/responses')),
    other(_request, response) {
      response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not here","type":"invalid_request_error"}}');
    },
    respond(body, response) {
      const id = `resp_mock_${++responses}`;
      if (options.failing && responses > 1) {
        response.writeHead(500, { 'content-type': 'application/json' }).end('{"error":{"message":"The stand-in upstream is failing","type":"server_error"}}');
        return;
      }
      response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
      sse(response, 'response.created', { response: { id } });
      if (options.failing) {
        sse(response, 'response.failed', {
          response: { id, status: 'failed', error: { code: 'server_error', message: 'The stand-in upstream failed mid-stream' } },
        });
        response.end();
        return;
      }
      const turn = turns[Math.min(toolOutputsIn(body), turns.length - 1)]!;
      sse(response, 'response.output_item.done', {
        output_index: 0,
        item: { type: 'message', role: 'assistant', id: `msg_mock_${responses}`, content: [{ type: 'output_text', text: turn.text }] },
      });
      const held = options.holdOpen?.(body, responses - 1);
      if (held === true) return;
      const n = responses;
      if (held) return void held.then(() => finish(response, id, n, turn));
      finish(response, id, n, turn);
    },
  });
}

/** The rest of a turn's answer after its message (the `n`th response): its tool call, if any, and the end. */
function finish(response: ServerResponse, id: string, n: number, turn: ResponsesTurn): void {
  if (turn.command) {
    const args = {
      cmd: turn.command.cmd,
      login: false,
      ...(turn.command.escalate
        ? { sandbox_permissions: 'require_escalated', justification: turn.command.justification ?? 'The mock model needs to run this outside the sandbox' }
        : {}),
    };
    sse(response, 'response.output_item.done', {
      output_index: 1,
      item: { type: 'function_call', id: `fc_mock_${n}`, call_id: `call_mock_${n}`, name: 'exec_command', arguments: JSON.stringify(args) },
    });
  }
  if (turn.patch !== undefined) {
    // apply_patch is a freeform ("custom") tool: its input is the patch text itself.
    sse(response, 'response.output_item.done', {
      output_index: 1,
      item: { type: 'custom_tool_call', id: `ctc_mock_${n}`, call_id: `call_mock_${n}`, name: 'apply_patch', input: turn.patch },
    });
  }
  sse(response, 'response.completed', { response: { id, usage: USAGE } });
  response.end();
}
