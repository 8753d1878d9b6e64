#!/usr/bin/env node
// A stand-in agent for the model proxy's streaming test: it asks its model API (at
// ANTHROPIC_BASE_URL, as Claude Code would) for a streamed response and prints one line per SSE
// event as it arrives: {"event": <n>, "at": <Date.now()>}. Then {"done": true, "status": <code>}.
import http from 'node:http';

const base = process.env.ANTHROPIC_BASE_URL;
if (!base) {
  process.stderr.write('ANTHROPIC_BASE_URL is not set\n');
  process.exit(2);
}
const request = http.request(
  `${base}/v1/messages`,
  { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': process.env.ANTHROPIC_API_KEY ?? '' } },
  (response) => {
    let events = 0;
    let pending = '';
    response.on('data', (chunk) => {
      const at = Date.now();
      const parts = (pending + chunk.toString()).split('\n\n');
      pending = parts.pop() ?? '';
      for (const part of parts) if (part.trim()) process.stdout.write(`${JSON.stringify({ event: events++, at })}\n`);
    });
    response.on('end', () => {
      process.stdout.write(`${JSON.stringify({ done: true, status: response.statusCode })}\n`);
    });
  },
);
request.on('error', (err) => {
  process.stderr.write(`${err.message}\n`);
  process.exit(1);
});
request.end(JSON.stringify({ model: 'claude-sonnet-4-5', stream: true, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }));
