import { useEffect, useRef, useState } from 'react';
import { apiPaths, type SessionLogMessageType } from '@svc/protocol';
import { gatewaySocket } from '../browser-transport.js';
import { useConsole } from '../console-context.js';

/** Lines kept on the page: the newest; the sandbox keeps the rest. */
const KEPT_LINES = 2000;
/** Lines the server sends first, from before the tab was opened. */
const TAIL_LINES = 200;
/** A dropped log stream is followed again after this long. */
const RECONNECT_MS = 1000;

/**
 * The session's sandbox logs (the sidecar's and the agent's output), followed over
 * `GET /v1/sessions/{id}/logs` as a WebSocket: the last lines first, then each new one, until
 * the sandbox's programs end. A dropped stream (a sandbox still starting, a gateway restarting)
 * is followed again a second later, from what comes next.
 */
export function SandboxLogs({ sessionId }: { sessionId: string }) {
  const { auth } = useConsole();
  const [lines, setLines] = useState<string[]>([]);
  const [state, setState] = useState('connecting…');
  const bottom = useRef<HTMLPreElement>(null);

  useEffect(() => {
    let socket: WebSocket | undefined;
    let retry: ReturnType<typeof setTimeout> | undefined;
    let ended = false;
    let received = 0;
    const connect = () => {
      // Again after a drop: only what comes next (the lines already shown are not sent twice).
      socket = gatewaySocket(apiPaths.sessionLogs(sessionId, { tail: received === 0 ? TAIL_LINES : 0 }), auth.signedIn?.token);
      socket.onopen = () => setState('following');
      socket.onmessage = (message) => {
        const frame = JSON.parse(String(message.data)) as SessionLogMessageType;
        if (frame.kind === 'lines') {
          received += frame.lines.length;
          setLines((kept) => [...kept, ...frame.lines].slice(-KEPT_LINES));
        } else {
          ended = true;
          setState(`ended: ${frame.reason}`);
        }
      };
      socket.onclose = (closed) => {
        if (ended || closed.code === 1000) return setState((now) => (now.startsWith('ended') ? now : 'ended'));
        // A sandbox still starting, a gateway restarting, the network: follow again shortly.
        setState('reconnecting…');
        retry = setTimeout(connect, RECONNECT_MS);
      };
    };
    connect();
    return () => {
      ended = true;
      clearTimeout(retry);
      socket?.close(1000);
    };
  }, [auth, sessionId]);

  // The newest line in view, as a terminal would.
  useEffect(() => {
    const pre = bottom.current;
    if (pre) pre.scrollTop = pre.scrollHeight;
  }, [lines]);

  return (
    <div className="logs">
      <p className="history" role="status">
        Sandbox logs: {state}
      </p>
      <pre ref={bottom} tabIndex={0} aria-label="Sandbox logs">
        {lines.length > 0 ? lines.join('\n') : '(no lines yet)'}
      </pre>
    </div>
  );
}
