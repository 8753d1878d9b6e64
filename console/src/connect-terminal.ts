import { FitAddon } from '@xterm/addon-fit';
import { Terminal, type ITerminalOptions } from '@xterm/xterm';
import { adoptXtermStyles } from './adopt-xterm-styles.js';
import { closedText, terminalSize, type TerminalSize, type TerminalState } from './terminal-state.js';

/**
 * A dark terminal whatever the page's scheme, each colour at least 4.5:1 against its background
 * (WCAG AA), black too (a program writes in it as often as on it).
 */
const THEME: ITerminalOptions['theme'] = {
  background: '#0d1117',
  foreground: '#e6edf3',
  cursor: '#e6edf3',
  cursorAccent: '#0d1117',
  selectionBackground: '#264f78',
  black: '#7d8590',
  red: '#ff7b72',
  green: '#3fb950',
  yellow: '#d29922',
  blue: '#58a6ff',
  magenta: '#bc8cff',
  cyan: '#39c5cf',
  white: '#b1bac4',
  brightBlack: '#8b949e',
  brightRed: '#ffa198',
  brightGreen: '#56d364',
  brightYellow: '#e3b341',
  brightBlue: '#79c0ff',
  brightMagenta: '#d2a8ff',
  brightCyan: '#56d4dd',
  brightWhite: '#ffffff',
};

/**
 * What the sandbox sends is drawn by xterm, and nothing of xterm's that reaches outside the
 * terminal is turned on: no clipboard (OSC 52 needs an addon, not loaded), no window reports or
 * moves (`windowOptions`, all off by default), the title it sets is not shown, and a link it
 * marks (OSC 8) opens only on a click, an http(s) one, after xterm's own confirm naming it.
 * Screen reader mode mirrors the rows as text a screen reader can read, and says new output.
 */
const OPTIONS: ITerminalOptions = {
  theme: THEME,
  fontFamily: "ui-monospace, 'SFMono-Regular', Menlo, Consolas, monospace",
  fontSize: 14,
  cursorBlink: false,
  screenReaderMode: true,
};

export interface TerminalConnection {
  /** The person closes the terminal: the shell ends. */
  close(): void;
  /** The terminal goes from the page (a new one, the page left): its socket closes first. */
  dispose(): void;
}

/**
 * Opens a terminal in `screen`, sized to it, and its WebSocket (`socketFor`, at that size): the
 * sandbox's bytes are written to it, the person's keys are sent as bytes (binary frames, as the
 * gateway relays them); `onState` hears of each step. A socket that fails before it opens was
 * refused by the gateway or never reached it; a browser is not told which, so `whyRefused` asks.
 * Once closed the terminal stays, read-only, with what it last showed. Tab goes to the shell
 * (completion); Shift+Tab leaves the terminal, so the keyboard is never held there. Not Escape then
 * Tab, as editors have it: a shell reads Escape as the start of the next key (Meta), and would
 * take whatever is typed on coming back as Meta-that.
 */
export function connectTerminal({
  screen,
  socketFor,
  whyRefused,
  onState,
}: {
  screen: HTMLElement;
  socketFor: (size: TerminalSize) => WebSocket;
  whyRefused: () => Promise<string>;
  onState: (state: TerminalState) => void;
}): TerminalConnection {
  const terminal = new Terminal(OPTIONS);
  const fit = new FitAddon();
  terminal.loadAddon(fit);
  terminal.open(screen);
  const dropStyles = adoptXtermStyles(screen);
  // The sandbox's shell is told this size once: later changes of the box are not passed on, so the terminal keeps it too.
  const size = terminalSize(fit.proposeDimensions());
  terminal.resize(size.cols, size.rows);
  // Not xterm's to handle: the browser moves the focus back out of the terminal.
  terminal.attachCustomKeyEventHandler((event) => !(event.key === 'Tab' && event.shiftKey));

  const socket = socketFor(size);
  socket.binaryType = 'arraybuffer';
  let opened = false;
  let byYou = false;
  let disposed = false;
  onState({ kind: 'connecting' });
  const send = (bytes: Uint8Array) => socket.readyState === WebSocket.OPEN && socket.send(bytes);
  const encoder = new TextEncoder();
  const typed = terminal.onData((text) => send(encoder.encode(text)));
  // Some mouse reports are bytes, not text: one char code each.
  const binary = terminal.onBinary((bytes) => send(Uint8Array.from(bytes, (char) => char.charCodeAt(0) & 0xff)));

  socket.onopen = () => {
    opened = true;
    onState({ kind: 'connected', size });
    terminal.focus();
  };
  socket.onmessage = (message: MessageEvent<ArrayBuffer | string>) =>
    terminal.write(typeof message.data === 'string' ? message.data : new Uint8Array(message.data));
  socket.onclose = (closed) => {
    if (disposed) return;
    typed.dispose();
    binary.dispose();
    terminal.options.disableStdin = true;
    if (!opened && !byYou) {
      void whyRefused().then((why) => !disposed && onState({ kind: 'closed', why }));
      return;
    }
    onState({ kind: 'closed', why: closedText({ code: closed.code, reason: closed.reason, byYou }) });
  };

  return {
    close() {
      byYou = true;
      socket.close(1000, 'closed by the person');
    },
    dispose() {
      disposed = true;
      socket.close(1000, 'the page closed it');
      dropStyles();
      terminal.dispose();
    },
  };
}
