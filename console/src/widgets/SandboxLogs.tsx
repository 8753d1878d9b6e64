import { useEffect, useRef, useState } from 'react';
import { apiPaths, type SessionLogMessageType } from '@svc/protocol';
import { gatewaySocket } from '../browser-transport.js';
import { useConsole } from '../console-context.js';

/** Lines kept on the page: the newest; the sandbox keeps the rest. */
const KEPT_LINES = 2000;
/** Lines the server sends first, from before the tab was opened. */
const TAIL_LINES = 200;

/**
 * The session's sandbox logs (the sidecar's and the agent's output), followed over
 * `GET /v1/sessions/{id}/logs` as a WebSocket: the last lines first, then each new one, until
 * the sandbox's programs end.
 */
export function SandboxLogs({ sessionId }: { sessionId: string }) {
  const { auth } = useConsole();
  const [lines, setLines] = useState<string[]>([]);
  const [state, setState] = useState('connecting…');
  const bottom = useRef<HTMLPreElement>(null);

  useEffect(() => {
    const socket = gatewaySocket(apiPaths.sessionLogs(sessionId, { tail: TAIL_LINES }), auth.signedIn?.token);
    socket.onopen = () => setState('following');
    socket.onmessage = (message) => {
      const frame = JSON.parse(String(message.data)) as SessionLogMessageType;
      if (frame.kind === 'lines') setLines((kept) => [...kept, ...frame.lines].slice(-KEPT_LINES));
      else setState(`ended: ${frame.reason}`);
    };
    socket.onclose = (closed) =>
      setState((now) => (now.startsWith('ended') ? now : closed.code === 1000 ? 'ended' : 'disconnected: open the tab again to follow'));
    return () => socket.close(1000);
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
