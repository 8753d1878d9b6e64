import type { ServerResponse } from 'node:http';
import { startModelStandIn, type ModelStandIn } from './model-stand-in.js';

/** One model turn the mock plays: some text, then optionally one call of Codex's `exec_command` tool. */
export interface ResponsesTurn {
  text: string;
  /** `cmd` runs in a shell; `escalate` asks to run it outside the sandbox (Codex then asks for approval when its policy is on-request). */
  command?: { cmd: string; escalate?: boolean; justification?: string };
}

/** The stand-in; `url` is the `base_url` of a Codex model provider (it ends in /v1). */
export type MockOpenAI = ModelStandIn;

function sse(response: ServerResponse, type: string, data: Record<string, unknown>): void {
  response.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
}

/** Whether the conversation's last input item hands back a tool's output (the model's next turn follows a call). */
function afterToolOutput(body: Record<string, unknown>): boolean {
  const input = Array.isArray(body['input']) ? (body['input'] as Array<{ type?: string }>) : [];
  return input.at(-1)?.type === 'function_call_output';
}

/**
 * A stand-in for the OpenAI Responses API on loopback, for running the real Codex CLI offline
 * (../shared/AGENTS.md: a `mock` model provider with `wire_api = "responses"`): `POST
 * /v1/responses` answers with a streamed (SSE) response — `turns[0]` for a conversation that does
 * not end in a tool's output (its text and its `exec_command` call), `turns[1]` for one that does.
 */
export async function startMockOpenAI(turns: [ResponsesTurn, ResponsesTurn]): Promise<MockOpenAI> {
  let responses = 0;
  return startModelStandIn({
    name: 'OpenAI',
    path: '/v1',
    isModelRequest: (request) => request.method === 'POST' && Boolean(request.url?.endsWith('/responses')),
    other(_request, response) {
      response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not here","type":"invalid_request_error"}}');
    },
    respond(body, response) {
      const turn = afterToolOutput(body) ? turns[1] : turns[0];
      const id = `resp_mock_${++responses}`;
      response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
      sse(response, 'response.created', { response: { id } });
      sse(response, 'response.output_item.done', { output_index: 0, item: { type: 'message', role: 'assistant', id: `msg_mock_${responses}`, content: [{ type: 'output_text', text: turn.text }] } });
      if (turn.command) {
        const args = {
          cmd: turn.command.cmd,
          login: false,
          ...(turn.command.escalate ? { sandbox_permissions: 'require_escalated', justification: turn.command.justification ?? 'The mock model needs to run this outside the sandbox' } : {}),
        };
        sse(response, 'response.output_item.done', { output_index: 1, item: { type: 'function_call', id: `fc_mock_${responses}`, call_id: `call_mock_${responses}`, name: 'exec_command', arguments: JSON.stringify(args) } });
      }
      sse(response, 'response.completed', {
        response: { id, usage: { input_tokens: 1000, input_tokens_details: { cached_tokens: 200 }, output_tokens: 50, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 1050 } },
      });
      response.end();
    },
  });
}
