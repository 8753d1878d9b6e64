import { useEffect, useRef, useState } from 'react';
import '@xterm/xterm/css/xterm.css';
import { apiPaths } from '@svc/protocol';
import { gatewaySocket } from '../browser-transport.js';
import { connectTerminal, type TerminalConnection } from '../connect-terminal.js';
import { useConsole } from '../console-context.js';
import { refusalText, terminalStatusText, type TerminalState } from '../terminal-state.js';

/**
 * A worker's Terminal tab (docs/console.md): a shell in its sandbox's `/workspace`, over
 * `GET /v1/workers/{id}/terminal` as a WebSocket. Looking at the tab opens nothing: a terminal is
 * opened by a click, and each opening is audited. Once closed it stays on the page, with what it
 * last showed, until it is opened again. `ended`: the worker has no sandbox left to open one in.
 */
export function TerminalPanel({ workerId, ended }: { workerId: string; ended: boolean }) {
  const { api, auth } = useConsole();
  const screen = useRef<HTMLDivElement>(null);
  const connection = useRef<TerminalConnection | undefined>(undefined);
  // Each opening is a terminal of its own (and a shell, and an audit record).
  const [opening, setOpening] = useState(0);
  const [state, setState] = useState<TerminalState>({ kind: 'idle' });

  useEffect(() => {
    if (opening === 0 || !screen.current) return;
    const opened = connectTerminal({
      screen: screen.current,
      socketFor: (size) => gatewaySocket(apiPaths.terminal(workerId, size), auth.signedIn?.token),
      // The same path as a plain request: the gateway answers why it would refuse it.
      whyRefused: () => api.request('GET', apiPaths.terminal(workerId)).then(refusalText, refusalText),
      onState: setState,
    });
    connection.current = opened;
    return () => {
      connection.current = undefined;
      opened.dispose();
    };
  }, [api, auth, workerId, opening]);

  const open = () => {
    setState({ kind: 'connecting' });
    setOpening((count) => count + 1);
  };
  const live = state.kind === 'connecting' || state.kind === 'connected';
  return (
    <div className="terminal">
      <p className="terminal-intro">
        A shell in the sandbox&apos;s <code>/workspace</code>, as the agent runs there. Opening one is recorded in the audit trail.
      </p>
      <div className="terminal-bar">
        {live ? (
          <button type="button" onClick={() => connection.current?.close()}>
            Close
          </button>
        ) : ended ? (
          <p className="terminal-ended">This worker has ended: its sandbox has no shell to open.</p>
        ) : (
          <button type="button" className="primary" onClick={open}>
            {state.kind === 'idle' ? 'Open a shell' : 'Open again'}
          </button>
        )}
        <p role="status" className="terminal-status">
          Terminal: {terminalStatusText(state)}
        </p>
      </div>
      <div ref={screen} className="terminal-screen" role="group" aria-label="Shell in the sandbox" hidden={state.kind === 'idle'} />
      {state.kind !== 'idle' && (
        <p className="terminal-note">
          Tab goes to the shell; Shift+Tab leaves the terminal. Its size is set when it opens; resizing the window later does not change the shell&apos;s: open
          it again for a new size.
        </p>
      )}
    </div>
  );
}
