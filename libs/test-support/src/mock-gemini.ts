import type { ServerResponse } from 'node:http';
import { startModelStandIn, type ModelStandIn } from './model-stand-in.js';

/** One model turn the Gemini stand-in plays: some text, then optionally one function call (Gemini CLI's `write_file`, say). */
export interface GeminiTurn {
  text: string;
  call?: { name: string; args: Record<string, unknown> };
}

/** The stand-in; `url` is the base URL for `GOOGLE_GEMINI_BASE_URL` (the client appends `/v1beta/models/…`). */
export type MockGemini = ModelStandIn;

export interface MockGeminiOptions {
  /** The turn to play instead of the one the conversation's function results say (undefined: that one). */
  turnOf?(body: Record<string, unknown>, functionResults: number): number | undefined;
  /**
   * Holds a request's answer after its text (`n`: the request's number, from 0), as a model
   * still streaming: `true` until the client goes away, a promise until it settles.
   */
  holdOpen?(body: Record<string, unknown>, n: number): boolean | Promise<void>;
}

/** What every answer reports, as `usageMetadata` (the figures the model proxy must meter). */
export const GEMINI_STAND_IN_USAGE = {
  promptTokenCount: 1200,
  cachedContentTokenCount: 300,
  candidatesTokenCount: 40,
  thoughtsTokenCount: 10,
  totalTokenCount: 1250,
} as const;

/** The model the stand-in says answered (`modelVersion`). */
const GEMINI_STAND_IN_MODEL = 'gemini-2.5-pro';

/** How many function results the conversation already holds: the index of the turn the model plays next. */
function functionResultsIn(body: Record<string, unknown>): number {
  const contents = Array.isArray(body['contents']) ? (body['contents'] as Array<{ parts?: Array<Record<string, unknown>> }>) : [];
  return contents.flatMap((content) => content.parts ?? []).filter((part) => part['functionResponse'] !== undefined).length;
}

const chunk = (parts: unknown[], last: boolean) => ({
  candidates: [{ content: { role: 'model', parts }, index: 0, ...(last ? { finishReason: 'STOP' } : {}) }],
  // Every chunk carries the counts so far; the last the whole.
  usageMetadata: last
    ? GEMINI_STAND_IN_USAGE
    : { promptTokenCount: GEMINI_STAND_IN_USAGE.promptTokenCount, totalTokenCount: GEMINI_STAND_IN_USAGE.promptTokenCount },
  modelVersion: GEMINI_STAND_IN_MODEL,
  responseId: 'mock-gemini-response',
});

/**
 * A stand-in for the Gemini API on loopback, for running Gemini CLI offline: `POST
 * /v1beta/models/<model>:streamGenerateContent?alt=sse` answers with Server-Sent Events
 * (`:generateContent` with one JSON object; `:countTokens` with a count). A conversation holding
 * n function results gets `turns[n]` (the last turn once they run out): a script per
 * conversation; `holdOpen` keeps an answer streaming.
 */
export async function startMockGemini(turns: readonly GeminiTurn[], options: MockGeminiOptions = {}): Promise<MockGemini> {
  if (turns.length === 0) throw new Error('the Gemini stand-in needs at least one turn to play');
  let answered = 0;
  return startModelStandIn({
    name: 'Gemini',
    isModelRequest: (request) => request.method === 'POST' && /:(stream)?[gG]enerateContent(\?|$)/.test(request.url ?? ''),
    other(request, response) {
      if (request.method === 'POST' && request.url?.includes(':countTokens')) {
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ totalTokens: GEMINI_STAND_IN_USAGE.promptTokenCount }));
        return;
      }
      response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"code":404,"message":"not here","status":"NOT_FOUND"}}');
    },
    respond(body, response, request) {
      const n = answered++;
      const results = functionResultsIn(body);
      const turn = turns[Math.min(options.turnOf?.(body, results) ?? results, turns.length - 1)]!;
      const rest = turn.call ? [{ functionCall: turn.call }] : [];
      if (!request.url?.includes(':streamGenerateContent')) {
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(chunk([{ text: turn.text }, ...rest], true)));
        return;
      }
      response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      sse(response, chunk([{ text: turn.text }], false));
      const held = options.holdOpen?.(body, n);
      if (held === true) return;
      const finish = () => {
        sse(response, chunk(rest.length > 0 ? rest : [{ text: '' }], true));
        response.end();
      };
      if (held) return void held.then(finish);
      finish();
    },
  });
}

function sse(response: ServerResponse, data: unknown): void {
  response.write(`data: ${JSON.stringify(data)}\r\n\r\n`);
}
