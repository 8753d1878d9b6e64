import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';

/**
 * `svc-sidecar demo-agent`: a scripted agent that speaks Claude Code's stream-json protocol
 * (the same lines the real CLI writes, see ../shared/fixtures/claude-code), so a newcomer sees
 * every widget and a real approval with no model and no API key. It is inside the sidecar
 * binary so a sandbox needs nothing else to run the demo.
 *
 * The turn: it says hello, lists its working directory (a read-only tool: no permission
 * needed), then asks to write `hello.txt` there. Allowed, it really writes the file (with the
 * input as decided, `updatedInput`) and asks the same once more to add a line (what "Always
 * allow" saves asking); denied, it reports the reason it got. Then it ends the turn with a
 * `result` carrying tokens and cost. Each further `user` message (a person's, in a conversation)
 * is answered in a turn of its own; it exits when its stdin closes. Started with `--resume
 * <session>` (a conversation resumed), it skips the scripted turn and answers the next message
 * as that session.
 */
export async function runDemoAgent(options: { stepMs?: number } = {}): Promise<number> {
  const stepMs = options.stepMs ?? Number(process.env['SVC_DEMO_STEP_MS'] ?? 400);
  // `--resume <session>`, as Claude Code is started again on its conversation.
  const resumeFlag = process.argv.indexOf('--resume');
  const resumed = resumeFlag >= 0 ? process.argv[resumeFlag + 1] : undefined;
  const sessionId = resumed ?? randomUUID();
  const output = demoOutput(sessionId);
  const input = demoInput(output.write);
  // Each step of a turn ends where a person's interrupt finds it (`Interrupted`).
  const pause = async () => {
    await new Promise((resolve) => setTimeout(resolve, stepMs));
    if (input.interrupted) throw new Interrupted();
  };
  const init = () =>
    output.write({
      type: 'system',
      subtype: 'init',
      cwd: process.cwd(),
      session_id: sessionId,
      tools: ['Glob', 'Write'],
      model: 'demo',
      permissionMode: 'default',
      claude_code_version: 'svc-demo',
    });
  if (resumed === undefined) {
    const task = (await input.nextMessage()) ?? '';
    init();
    await inTurn({ output, input }, () => firstTurn({ output, input }, task, pause));
  }
  // Like the real CLI in stream-json mode: every further message is a turn, until stdin closes.
  for (let turn = 2, said = await input.nextMessage(); said !== undefined; turn++, said = await input.nextMessage()) {
    init();
    const number = turn;
    await inTurn({ output, input }, async () => {
      await pause();
      const again = resumed !== undefined && number === 2 ? `We pick up our conversation ${sessionId} again. ` : '';
      const answer = `${again}You said: "${said.slice(0, 200)}". I am a script, so that is all I can do with it; turn ${number} ends here.`;
      output.say([{ type: 'text', text: answer }]);
      output.write({
        type: 'result',
        subtype: 'success',
        is_error: false,
        num_turns: 1,
        duration_ms: stepMs,
        result: answer,
        session_id: sessionId,
        total_cost_usd: 0.0123 + 0.001 * (number - 1),
      });
    });
  }
  return 0;
}

/**
 * The scripted first turn: hello, a look around (a read-only tool), a file written if allowed
 * and a line added to it (the same request again), a `result` with tokens and cost.
 */
async function firstTurn(io: { output: ReturnType<typeof demoOutput>; input: ReturnType<typeof demoInput> }, task: string, pause: () => Promise<unknown>) {
  const { write, say, toolResult } = io.output;
  const cwd = process.cwd();
  const started = Date.now();
  await pause();
  say([
    { type: 'text', text: `Hello! I am the svc demo agent: a script, no model, no API key. You asked: "${task.slice(0, 200)}". I will look around first.` },
  ]);
  await pause();

  say([{ type: 'tool_use', id: 'toolu_demo_1', name: 'Glob', input: { pattern: '*', path: cwd } }]);
  await pause();
  const entries = readdirSync(cwd).sort();
  toolResult('toolu_demo_1', entries.length > 0 ? entries.join('\n') : '(the directory is empty)', false);
  await pause();

  const filePath = path.join(cwd, 'hello.txt');
  const greeting = 'hello from the svc demo agent\n';
  const description = 'Write hello.txt in the working directory';
  const first = await askToWrite(io, 'toolu_demo_2', { file_path: filePath, content: greeting }, description);
  let summary: string;
  if (!first.written) summary = `Understood, I did not write the file (${first.reason}).`;
  else {
    await pause();
    // The same request once more: a person who chose "Always allow" is not asked again.
    say([{ type: 'text', text: 'Now I add a line to it: the same Write again. If you chose "Always allow", nobody is asked this time.' }]);
    await pause();
    const second = await askToWrite(io, 'toolu_demo_3', { file_path: filePath, content: `${greeting}hello again\n` }, description);
    summary = second.written
      ? `Done: I wrote ${path.basename(first.target)}, then added a line.`
      : `I wrote ${path.basename(first.target)}, but did not add the line (${second.reason}).`;
  }
  await pause();
  say([{ type: 'text', text: summary }]);
  await pause();
  write({
    type: 'result',
    subtype: 'success',
    is_error: false,
    num_turns: first.written ? 4 : 3,
    duration_ms: Date.now() - started,
    result: summary,
    session_id: io.output.sessionId,
    total_cost_usd: 0.0123,
    modelUsage: { demo: { inputTokens: 3600, outputTokens: 120, cacheReadInputTokens: 0, costUSD: 0.0123 } },
  });
}

/** A person's interrupt reached a turn of the demo agent. */
class Interrupted extends Error {}

/** Runs one turn; an interrupt ends it as Claude Code ends one, with an `error_during_execution` result. */
async function inTurn(io: { output: ReturnType<typeof demoOutput>; input: ReturnType<typeof demoInput> }, turn: () => Promise<void>): Promise<void> {
  io.input.turnRunning = true;
  try {
    await turn();
  } catch (err) {
    if (!(err instanceof Interrupted)) throw err;
    io.output.write({
      type: 'user',
      message: { role: 'user', content: [{ type: 'text', text: '[Request interrupted by user]' }] },
      session_id: io.output.sessionId,
    });
    io.output.write({ type: 'result', subtype: 'error_during_execution', is_error: true, num_turns: 1, session_id: io.output.sessionId });
  } finally {
    io.input.turnRunning = false;
    io.input.interrupted = false;
  }
}

type Line = Record<string, unknown>;

/** The lines the demo agent writes on stdout, in Claude Code's shapes, for one session. */
function demoOutput(sessionId: string) {
  const write = (line: Line) => process.stdout.write(`${JSON.stringify(line)}\n`);
  let messageCount = 0;
  return {
    sessionId,
    write,
    say: (content: Line[]) =>
      write({
        type: 'assistant',
        message: {
          id: `msg_demo_${++messageCount}`,
          type: 'message',
          role: 'assistant',
          model: 'demo',
          content,
          stop_reason: null,
          usage: { input_tokens: 1200 * messageCount, output_tokens: 40 },
        },
        parent_tool_use_id: null,
        session_id: sessionId,
      }),
    toolResult: (toolUseId: string, content: string, isError: boolean) =>
      write({
        type: 'user',
        message: { role: 'user', content: [{ tool_use_id: toolUseId, type: 'tool_result', content, is_error: isError }] },
        parent_tool_use_id: null,
        session_id: sessionId,
      }),
  };
}

/**
 * What the sidecar writes on the demo agent's stdin: the `initialize` handshake (answered at
 * once), the prompt and people's messages (`user` lines, taken one at a time), the decisions on
 * its requests, and a person's `interrupt`.
 */
function demoInput(write: (line: Line) => void) {
  const input = createInterface({ input: process.stdin });
  const waiting = new Map<string, (message: Line) => void>();
  const messages: string[] = [];
  let messageArrived: (() => void) | undefined;
  let closed = false;
  input.once('close', () => {
    closed = true;
    messageArrived?.();
  });
  input.on('line', (line) => {
    let message: Line;
    try {
      message = JSON.parse(line) as Line;
    } catch {
      process.stderr.write(`demo-agent: ignoring a line that is not JSON\n`);
      return;
    }
    const request = message['request'] as { subtype?: string } | undefined;
    if (message['type'] === 'control_request' && request?.subtype === 'interrupt') {
      // As Claude Code: its open permission prompts are cancelled, and the turn ends at its next step.
      if (state.turnRunning) state.interrupted = true;
      for (const [requestId, resolve] of waiting) {
        write({ type: 'control_cancel_request', request_id: requestId });
        resolve({ behavior: 'deny', message: 'The user interrupted the turn.' });
      }
      waiting.clear();
      write({ type: 'control_response', response: { subtype: 'success', request_id: message['request_id'] } });
    } else if (message['type'] === 'control_request' && request?.subtype === 'initialize') {
      write({
        type: 'control_response',
        response: { subtype: 'success', request_id: message['request_id'], response: { commands: [], models: [{ value: 'demo' }] } },
      });
    } else if (message['type'] === 'user') {
      const content = (message['message'] as { content?: unknown } | undefined)?.content;
      messages.push(Array.isArray(content) ? content.map((block: { text?: string }) => block.text ?? '').join('') : String(content ?? ''));
      messageArrived?.();
    } else if (message['type'] === 'control_response') {
      const response = message['response'] as { request_id?: string; response?: Line } | undefined;
      const resolve = waiting.get(response?.request_id ?? '');
      if (resolve) resolve(response?.response ?? {});
    }
  });
  const state = {
    /** A turn runs: an interrupt ends it. */
    turnRunning: false,
    /** A person interrupted the running turn. */
    interrupted: false,
    /** The next `user` message, in order; undefined once stdin has closed with none left. */
    async nextMessage(): Promise<string | undefined> {
      while (messages.length === 0 && !closed) await new Promise<void>((resolve) => (messageArrived = resolve));
      return messages.shift();
    },
    /** The answer to request `requestId`, once it arrives. */
    decisionOn: (requestId: string) => new Promise<Line>((resolve) => waiting.set(requestId, resolve)),
  };
  return state;
}

/** Asks to write a file, as Claude Code asks: allowed, it writes what was decided (`updatedInput`); denied, it reports why. */
async function askToWrite(
  { output, input }: { output: ReturnType<typeof demoOutput>; input: ReturnType<typeof demoInput> },
  toolUseId: string,
  proposed: { file_path: string; content: string },
  description: string,
) {
  output.say([{ type: 'tool_use', id: toolUseId, name: 'Write', input: proposed }]);
  const requestId = randomUUID();
  const decision = input.decisionOn(requestId);
  output.write({
    type: 'control_request',
    request_id: requestId,
    request: { subtype: 'can_use_tool', tool_name: 'Write', display_name: 'Write', input: proposed, tool_use_id: toolUseId, description },
  });
  const answer = await decision;
  if (answer['behavior'] !== 'allow') {
    const reason = typeof answer['message'] === 'string' ? answer['message'] : 'denied';
    output.toolResult(toolUseId, reason, true);
    return { written: false as const, reason };
  }
  const decided = (answer['updatedInput'] ?? proposed) as { file_path?: unknown; content?: unknown };
  const target = typeof decided.file_path === 'string' ? decided.file_path : proposed.file_path;
  const existed = existsSync(target);
  writeFileSync(target, typeof decided.content === 'string' ? decided.content : proposed.content);
  output.toolResult(toolUseId, existed ? `The file ${target} has been updated.` : `File created successfully at: ${target}`, false);
  return { written: true as const, target };
}
