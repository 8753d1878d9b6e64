#!/usr/bin/env node
// A stand-in for `codex app-server`, for the sidecar's tests: it takes the real CLI's arguments
// (and ignores them) and replays the real transcript named by TRANSCRIPT
// (sidecar/test/fixtures/codex/appserver-*.jsonl): what Codex sent ("recv") it writes to stdout;
// before each line the real client sent ("send") it waits until a message with the same method
// (or, for a response, the same id) arrives on stdin, and appends every response to a Codex
// request (an approval decision) to DECISION_FILE. It exits when stdin closes, as app-server does.
import { appendFileSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

// `codex sandbox -- true`, the sidecar's check that Codex's own sandbox works here: it does.
if (process.argv[2] === 'sandbox') process.exit(0);

const lines = readFileSync(process.env.TRANSCRIPT, 'utf8')
  .split('\n')
  .filter((line) => line.trim() !== '')
  .map((line) => JSON.parse(line))
  .filter((line) => line.dir !== 'note');
const received = [];
let waiting;
const input = createInterface({ input: process.stdin });
input.on('line', (line) => {
  const message = JSON.parse(line);
  received.push(message);
  if (message.method === undefined && 'result' in message) appendFileSync(process.env.DECISION_FILE, `${line}\n`);
  waiting?.();
});
input.on('close', () => process.exit(0));
const next = (expected) =>
  new Promise((resolve) => {
    const check = () => {
      const index = received.findIndex((m) => (expected.method !== undefined ? m.method === expected.method : m.method === undefined && m.id === expected.id));
      if (index >= 0) resolve(received.splice(index, 1)[0]);
    };
    waiting = check;
    check();
  });

for (const line of lines) {
  if (line.dir === 'send') await next(line.msg);
  else process.stdout.write(`${JSON.stringify(line.msg)}\n`);
}
