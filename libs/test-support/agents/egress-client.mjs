#!/usr/bin/env node
// A stand-in agent for the egress tests: for each `host:port` of EGRESS_TARGETS (space-separated),
// in order, it opens a CONNECT tunnel through HTTPS_PROXY, sends "ping\n" and reads one line back
// (the tests' echo servers answer it), then prints one JSON line:
// {"target", "status", "echo"} (or "reason" when the proxy refused).
import http from 'node:http';

const proxy = process.env.HTTPS_PROXY;
if (!proxy) {
  process.stderr.write('HTTPS_PROXY is not set\n');
  process.exit(2);
}
const say = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);

function tunnel(target) {
  return new Promise((resolve) => {
    const request = http.request(proxy, { method: 'CONNECT', path: target });
    request.on('connect', (response, socket, head) => {
      if (response.statusCode !== 200) {
        let reason = head.toString();
        socket.on('data', (chunk) => (reason += chunk.toString()));
        socket.on('close', () => resolve({ target, status: response.statusCode, reason: reason.trim() }));
        socket.on('error', () => resolve({ target, status: response.statusCode, reason: reason.trim() }));
        return;
      }
      let echo = '';
      socket.on('data', (chunk) => {
        echo += chunk.toString();
        if (echo.includes('\n')) {
          socket.end();
          resolve({ target, status: 200, echo: echo.trim() });
        }
      });
      socket.on('error', (err) => resolve({ target, status: 200, error: err.message }));
      socket.write('ping\n');
    });
    request.on('response', (response) => {
      let reason = '';
      response.on('data', (chunk) => (reason += chunk.toString()));
      response.on('end', () => resolve({ target, status: response.statusCode, reason: reason.trim() }));
    });
    request.on('error', (err) => resolve({ target, status: 0, reason: err.message }));
    request.end();
  });
}

for (const target of (process.env.EGRESS_TARGETS ?? '').split(' ').filter(Boolean)) say(await tunnel(target));
