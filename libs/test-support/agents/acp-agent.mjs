#!/usr/bin/env node
// A scripted Agent Client Protocol agent (the protocol's own library, agent side), for tests of
// the sidecar's `acp` adapter that need no model. It behaves as Gemini CLI does over ACP: it asks
// `session/request_permission` before a write (options allow once/always, reject once/always),
// writes through the client's `fs/write_text_file` when the client offers it, reports the
// refusal, streams its text in chunks, and ends a cancelled turn with `cancelled`.
//
// What a prompt's text asks:
// - `write <name>`: a write of `<name>` (relative to the session's cwd) holding `hello`, asked first;
// - `run <command…>`: the command (to the end of the line) asked, then run in the client's terminal;
// - `sneak <command…>`: the same run in the client's terminal without asking first;
// - `slowly`: a turn that runs until `session/cancel`;
// - anything else: an answer naming the prompt ("Heard: <text>").
// Sessions are kept in `ACP_STATE_DIR` (one JSON file each), so `session/load` replays them.
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { agent, ndJsonStream, PROTOCOL_VERSION, RequestError } from '@agentclientprotocol/sdk';

const stateDir = process.env.ACP_STATE_DIR ?? path.join(process.cwd(), '.acp-stand-in');
mkdirSync(stateDir, { recursive: true });
const sessionFile = (id) => path.join(stateDir, `${id.replace(/[^A-Za-z0-9-]/g, '')}.json`);
const sessions = new Map();
let clientCapabilities = {};
let calls = 0;

function save(session) {
  writeFileSync(sessionFile(session.id), JSON.stringify({ id: session.id, cwd: session.cwd, said: session.said }));
}

const textOf = (prompt) =>
  prompt
    .filter((block) => block.type === 'text')
    .map((block) => block.text)
    .join('\n');

async function say(client, sessionId, text) {
  // In two chunks, as a model streams.
  const half = Math.ceil(text.length / 2);
  for (const part of [text.slice(0, half), text.slice(half)])
    await client.notify('session/update', { sessionId, update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: part } } });
}

async function writeTurn(client, session, name, signal) {
  const file = path.resolve(session.cwd, name);
  const toolCallId = `write_file-${++calls}`;
  const call = { toolCallId, title: `Write ${name}`, kind: 'edit', locations: [{ path: file }], rawInput: { file_path: file, content: 'hello\n' } };
  await client.notify('session/update', { sessionId: session.id, update: { sessionUpdate: 'tool_call', status: 'pending', ...call } });
  const answer = await client.request('session/request_permission', {
    sessionId: session.id,
    toolCall: { toolCallId, status: 'pending', title: call.title },
    options: [
      { optionId: 'proceed_once', name: 'Allow', kind: 'allow_once' },
      { optionId: 'proceed_always', name: 'Allow always', kind: 'allow_always' },
      { optionId: 'cancel', name: 'Reject', kind: 'reject_once' },
    ],
  });
  if (answer.outcome.outcome === 'cancelled' || signal.aborted) return 'cancelled';
  if (answer.outcome.optionId === 'cancel') {
    await client.notify('session/update', {
      sessionId: session.id,
      update: {
        sessionUpdate: 'tool_call_update',
        toolCallId,
        status: 'failed',
        content: [{ type: 'content', content: { type: 'text', text: 'The user refused the write.' } }],
      },
    });
    await say(client, session.id, `I was not allowed to write ${name}.`);
    return 'end_turn';
  }
  if (clientCapabilities.fs?.writeTextFile) await client.request('fs/write_text_file', { sessionId: session.id, path: file, content: 'hello\n' });
  else writeFileSync(file, 'hello\n');
  await client.notify('session/update', {
    sessionId: session.id,
    update: {
      sessionUpdate: 'tool_call_update',
      toolCallId,
      status: 'completed',
      content: [{ type: 'content', content: { type: 'text', text: `Wrote ${name}` } }],
    },
  });
  await say(client, session.id, `I wrote ${name}.`);
  return 'end_turn';
}

/** A command run in the client's terminal (after asking, unless `sneak`): its output is the call's result. */
async function runTurn(client, session, command, ask) {
  const toolCallId = `run_shell_command-${++calls}`;
  if (ask) {
    const answer = await client.request('session/request_permission', {
      sessionId: session.id,
      toolCall: { toolCallId, status: 'pending', title: command, kind: 'execute' },
      options: [
        { optionId: 'proceed_once', name: 'Allow', kind: 'allow_once' },
        { optionId: 'cancel', name: 'Reject', kind: 'reject_once' },
      ],
    });
    if (answer.outcome.outcome !== 'selected' || answer.outcome.optionId !== 'proceed_once') {
      await say(client, session.id, 'I was not allowed to run it.');
      return 'end_turn';
    }
  }
  let text;
  try {
    const { terminalId } = await client.request('terminal/create', { sessionId: session.id, command: 'sh', args: ['-c', command], cwd: session.cwd });
    const exit = await client.request('terminal/wait_for_exit', { sessionId: session.id, terminalId });
    const { output } = await client.request('terminal/output', { sessionId: session.id, terminalId });
    await client.request('terminal/release', { sessionId: session.id, terminalId });
    text = `exit ${exit.exitCode}: ${output}`;
  } catch (err) {
    text = `The terminal refused: ${err.message}`;
  }
  await client.notify('session/update', {
    sessionId: session.id,
    update: {
      sessionUpdate: 'tool_call',
      toolCallId,
      title: command,
      kind: 'execute',
      status: 'completed',
      content: [{ type: 'content', content: { type: 'text', text } }],
    },
  });
  await say(client, session.id, text);
  return 'end_turn';
}

const app = agent({ name: 'acp-stand-in' })
  .onRequest('initialize', ({ params }) => {
    clientCapabilities = params.clientCapabilities ?? {};
    return {
      protocolVersion: PROTOCOL_VERSION,
      agentCapabilities: { loadSession: true, promptCapabilities: { image: true } },
      agentInfo: { name: 'acp-stand-in', version: '1.0.0' },
    };
  })
  .onRequest('session/new', ({ params }) => {
    const session = { id: randomUUID(), cwd: params.cwd, said: [], cancel: undefined };
    sessions.set(session.id, session);
    save(session);
    return { sessionId: session.id };
  })
  .onRequest('session/load', async ({ params, client }) => {
    let kept;
    try {
      kept = JSON.parse(readFileSync(sessionFile(params.sessionId), 'utf8'));
    } catch {
      throw RequestError.sessionNotFound(params.sessionId);
    }
    const session = { ...kept, cwd: params.cwd, cancel: undefined };
    sessions.set(session.id, session);
    // The conversation so far, replayed as the protocol asks of `session/load`.
    for (const text of session.said)
      await client.notify('session/update', { sessionId: session.id, update: { sessionUpdate: 'user_message_chunk', content: { type: 'text', text } } });
    return {};
  })
  .onNotification('session/cancel', ({ params }) => sessions.get(params.sessionId)?.cancel?.abort())
  .onRequest('session/prompt', async ({ params, client }) => {
    const session = sessions.get(params.sessionId);
    if (!session) throw RequestError.sessionNotFound(params.sessionId);
    const cancel = new AbortController();
    session.cancel = cancel;
    const text = textOf(params.prompt);
    const images = params.prompt.filter((block) => block.type === 'image').length;
    session.said.push(text);
    save(session);
    await client.notify('session/update', {
      sessionId: session.id,
      update: { sessionUpdate: 'plan', entries: [{ content: `Answer: ${text}`, priority: 'high', status: 'in_progress' }] },
    });
    let stop = 'end_turn';
    const write = /write (\S+)/.exec(text);
    const run = /(run|sneak) (.+)$/.exec(text);
    if (run) stop = await runTurn(client, session, run[2], run[1] === 'run');
    else if (write) stop = await writeTurn(client, session, write[1], cancel.signal);
    else if (text.includes('slowly')) {
      await say(client, session.id, 'Thinking it over');
      await new Promise((resolve) => cancel.signal.addEventListener('abort', resolve, { once: true }));
      stop = 'cancelled';
    } else
      await say(client, session.id, `Heard: ${text}${images ? ` (and ${images} image${images > 1 ? 's' : ''})` : ''}. Turns so far: ${session.said.length}.`);
    if (cancel.signal.aborted) stop = 'cancelled';
    await client.notify('session/update', { sessionId: session.id, update: { sessionUpdate: 'usage_update', used: 1000 * session.said.length, size: 200000 } });
    return { stopReason: stop };
  });

const connection = app.connect(ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
await connection.closed;
process.exit(0);
