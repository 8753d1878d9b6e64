import type { ServerResponse } from 'node:http';
import { startModelStandIn, type ModelStandIn } from './model-stand-in.js';

/** One model turn the mock plays: some text, then optionally one tool call. */
export interface ScriptedTurn {
  text: string;
  tool?: { name: string; input: Record<string, unknown> };
}

/** The stand-in; `url` is the base URL for `ANTHROPIC_BASE_URL`. */
export type MockAnthropic = ModelStandIn;

function sse(response: ServerResponse, event: string, data: unknown): void {
  response.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

/** How many tool results the conversation already holds: the index of the turn the model plays next. */
function toolResultsIn(body: Record<string, unknown>): number {
  const messages = Array.isArray(body['messages']) ? (body['messages'] as Array<{ role?: string; content?: unknown }>) : [];
  return messages.filter(
    (message) =>
      Array.isArray(message.content) &&
      message.content.some((block) => typeof block === 'object' && block !== null && (block as { type?: string }).type === 'tool_result'),
  ).length;
}

/**
 * A stand-in for the Anthropic Messages API on loopback, for running the real Claude Code CLI
 * offline (../shared/AGENTS.md): `POST /v1/messages` answers with a streamed (SSE) assistant
 * message — a conversation holding n tool results gets `turns[n]` (the last turn once they run
 * out): a script per conversation; `holdOpen` keeps an answer streaming. `HEAD /` answers 200
 * (2.1.197 checks it).
 */
export async function startMockAnthropic(
  turns: readonly ScriptedTurn[],
  options: {
    /**
     * Holds the answer to a request open after its first words (`n`: the request's number, from
     * 0), as a model still streaming: the client's interrupt, not the model, ends it.
     */
    holdOpen?(body: Record<string, unknown>, n: number): boolean;
    /** Pauses the answer to a request after its first words for the milliseconds returned (undefined: no pause), as a model slow to go on. */
    pauseMs?(body: Record<string, unknown>, n: number): number | undefined;
    /** Picks the turn to play another way than by the tool results (undefined: by them). */
    turnOf?(body: Record<string, unknown>, toolResults: number): number | undefined;
  } = {},
): Promise<MockAnthropic> {
  if (turns.length === 0) throw new Error('the Anthropic stand-in needs at least one turn to play');
  let messages = 0;
  return startModelStandIn({
    name: 'Anthropic',
    isModelRequest: (request) => request.method === 'POST' && Boolean(request.url?.startsWith('/v1/messages')),
    other(request, response) {
      if (request.method === 'HEAD' || request.method === 'GET') return void response.writeHead(200).end();
      response.writeHead(404, { 'content-type': 'application/json' }).end('{"type":"error","error":{"type":"not_found_error","message":"not here"}}');
    },
    respond(body, response) {
      const toolResults = toolResultsIn(body);
      const turn = turns[Math.min(options.turnOf?.(body, toolResults) ?? toolResults, turns.length - 1)]!;
      const id = `msg_mock_${String(++messages).padStart(4, '0')}`;
      response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
      sse(response, 'message_start', {
        type: 'message_start',
        message: {
          id,
          type: 'message',
          role: 'assistant',
          model: String(body['model'] ?? 'claude-mock'),
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: 100, output_tokens: 1 },
        },
      });
      sse(response, 'content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
      sse(response, 'content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: turn.text } });
      if (options.holdOpen?.(body, messages - 1)) return;
      const n = messages;
      const finish = () => {
        if (response.destroyed) return;
        sse(response, 'content_block_stop', { type: 'content_block_stop', index: 0 });
        if (turn.tool) {
          sse(response, 'content_block_start', {
            type: 'content_block_start',
            index: 1,
            content_block: { type: 'tool_use', id: `toolu_mock_${String(n).padStart(2, '0')}`, name: turn.tool.name, input: {} },
          });
          sse(response, 'content_block_delta', {
            type: 'content_block_delta',
            index: 1,
            delta: { type: 'input_json_delta', partial_json: JSON.stringify(turn.tool.input) },
          });
          sse(response, 'content_block_stop', { type: 'content_block_stop', index: 1 });
        }
        sse(response, 'message_delta', {
          type: 'message_delta',
          delta: { stop_reason: turn.tool ? 'tool_use' : 'end_turn', stop_sequence: null },
          usage: { output_tokens: 24 },
        });
        sse(response, 'message_stop', { type: 'message_stop' });
        response.end();
      };
      const pause = options.pauseMs?.(body, n - 1);
      if (pause === undefined) finish();
      else setTimeout(finish, pause);
    },
  });
}
