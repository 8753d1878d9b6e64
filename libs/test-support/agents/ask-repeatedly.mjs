#!/usr/bin/env node
// A stand-in for the Claude Code CLI for bench/sidecar: it speaks the CLI's stream-json (the
// shapes in sidecar/test/fixtures/claude-code) and asks for permission ASKS times, one request
// at a time, each with a fresh request_id. For each decision it receives (a repeat included: a
// test counts them) it appends "<request_id> <ms>" to RECEIPTS (ms on the machine's wall clock
// with sub-ms precision, as the bench measures); after the last one it ends the turn with a
// `result` and exits when stdin closes.
import { appendFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';

const asks = Number(process.env.ASKS ?? 100);
const now = () => performance.timeOrigin + performance.now();
const emit = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);
let pending;
let asked = 0;

function ask() {
  if (asked === asks) {
    emit({ type: 'result', subtype: 'success', is_error: false, num_turns: 1, result: 'done', total_cost_usd: 0, modelUsage: {} });
    return;
  }
  asked++;
  pending = randomUUID();
  emit({
    type: 'control_request',
    request_id: pending,
    request: { subtype: 'can_use_tool', tool_name: 'Bash', input: { command: `echo ${asked}` }, tool_use_id: `toolu_${asked}` },
  });
}

const stdin = createInterface({ input: process.stdin });
stdin.on('line', (line) => {
  const message = JSON.parse(line);
  if (message.type === 'user') return ask();
  if (message.type !== 'control_response') return;
  appendFileSync(process.env.RECEIPTS, `${message.response?.request_id} ${now()}\n`);
  if (message.response?.request_id === pending) ask();
});
stdin.on('close', () => process.exit(0));
