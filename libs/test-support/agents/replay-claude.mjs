#!/usr/bin/env node
// A stand-in for the Claude Code CLI in stream-json mode, for the sidecar's decision tests: it
// takes the real CLI's arguments (and ignores them) and replays the real transcript named by
// TRANSCRIPT (sidecar/test/fixtures/claude-code/<name>.stdout.jsonl) line by line, and when the transcript asks for permission (a can_use_tool control_request) it waits
// for the answer on stdin, as the real CLI does, and writes that answer to DECISION_FILE. The
// real binary runs in the real-agent tests; this one needs no model server.
import { appendFileSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const lines = readFileSync(process.env.TRANSCRIPT, 'utf8')
  .split('\n')
  .filter((line) => line.trim() !== '');
const stdin = createInterface({ input: process.stdin });
const received = [];
let waiting;
stdin.on('line', (line) => {
  received.push(JSON.parse(line));
  waiting?.();
});
const next = (predicate) =>
  new Promise((resolve) => {
    const check = () => {
      const found = received.find(predicate);
      if (found) resolve(found);
    };
    waiting = check;
    check();
  });

// The CLI reads the prompt before it starts (the sidecar sends the handshake, then the prompt).
await next((message) => message.type === 'user');
for (const line of lines) {
  const parsed = JSON.parse(line);
  process.stdout.write(`${line}\n`);
  if (parsed.type === 'control_request' && parsed.request?.subtype === 'can_use_tool') {
    const answer = await next((message) => message.type === 'control_response' && message.response?.request_id === parsed.request_id);
    appendFileSync(process.env.DECISION_FILE, `${JSON.stringify(answer)}\n`);
  }
}
process.exit(0);
