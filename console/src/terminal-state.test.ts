import { describe, expect, it } from 'vitest';
import { TERMINAL_CLOSE } from '@svc/protocol';
import { ApiError } from './api.js';
import { closedText, refusalText, terminalSize, terminalStatusText } from './terminal-state.js';

describe('the Terminal tab says what became of its terminal', () => {
  it('terminal — each close code in words, with the reason the other end gave', () => {
    const closed = (code: number, reason = '') => closedText({ code, reason, byYou: false });
    expect(closed(TERMINAL_CLOSE.shellEnded, 'the shell exited (0)')).toBe('the shell ended (the shell exited (0))');
    expect(closed(TERMINAL_CLOSE.shellEnded)).toBe('the shell ended');
    expect(closed(TERMINAL_CLOSE.sandboxUnanswered, JSON.stringify({ reason: "the sandbox's sidecar did not answer" }))).toBe(
      "the sandbox's sidecar did not answer within 15 s",
    );
    expect(closed(TERMINAL_CLOSE.otherEndGone)).toBe("the sandbox's end went");
    expect(closed(1011, JSON.stringify({ reason: 'the terminal could not be requested: try again' }))).toBe(
      'the terminal failed (the terminal could not be requested: try again)',
    );
    expect(closed(1011)).toBe('the terminal failed');
    expect(closed(1012, JSON.stringify({ reason: 'the server is restarting; connect again' }))).toBe('the gateway is restarting: open it again in a moment');
    expect(closed(1006)).toBe('the connection was lost');
    expect(closed(4999, 'sign in again at evil.example')).toBe('the connection closed (code 4999: sign in again at evil.example)');
    expect(closed(1001)).toBe('the connection closed (code 1001)');
  });

  it('terminal — closed by the person: said as theirs, whatever the code', () => {
    expect(closedText({ code: 1006, reason: '', byYou: true })).toBe('you closed it');
    expect(closedText({ code: 1000, reason: '', byYou: true })).toBe('you closed it');
  });

  it("terminal — the sandbox's words are text on one line: control characters go, the length is bounded", () => {
    const said = closedText({ code: TERMINAL_CLOSE.shellEnded, reason: 'gone\u001b[2J\u0007\nnow ' + 'x'.repeat(300), byYou: false });
    expect(said).toMatch(/^the shell ended \(gone \[2J now x+\)$/);
    expect(said.length).toBeLessThan(150);
  });

  it('terminal — a refused opening in words, from the gateway’s answer to the same path', () => {
    expect(refusalText(new ApiError(404, 'worker_not_found', 'no worker wrk_x'))).toBe('no such worker here, or it is not yours');
    expect(refusalText(new ApiError(409, 'worker_ended', 'worker wrk_x is completed: its sandbox has no sidecar to open a terminal'))).toBe(
      'worker wrk_x is completed: its sandbox has no sidecar to open a terminal',
    );
    expect(refusalText(new ApiError(400, 'invalid_request', 'this endpoint is a WebSocket'))).toMatch(/^could not connect: .*too many of your streams/);
    expect(refusalText(undefined)).toMatch(/^could not connect: .*too many of your streams/);
    expect(refusalText(new TypeError('Failed to fetch'))).toBe('could not connect: the gateway could not be reached (Failed to fetch)');
  });

  it('terminal — the size asked for is what fits, within what the gateway takes; 80×24 when nothing fits', () => {
    expect(terminalSize({ cols: 120.6, rows: 30.2 })).toEqual({ cols: 120, rows: 30 });
    expect(terminalSize({ cols: 4, rows: 1 })).toEqual({ cols: 10, rows: 2 });
    expect(terminalSize({ cols: 5000, rows: 900 })).toEqual({ cols: 1000, rows: 500 });
    expect(terminalSize(undefined)).toEqual({ cols: 80, rows: 24 });
    expect(terminalSize({ cols: Number.NaN, rows: Number.POSITIVE_INFINITY })).toEqual({ cols: 80, rows: 24 });
  });

  it('terminal — the status line', () => {
    expect(terminalStatusText({ kind: 'connecting' })).toBe('connecting…');
    expect(terminalStatusText({ kind: 'connected', size: { cols: 100, rows: 30 } })).toBe('connected (100×30)');
    expect(terminalStatusText({ kind: 'closed', why: 'the shell ended' })).toBe('closed: the shell ended');
  });
});
