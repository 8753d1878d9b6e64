/**
 * Every C0 and C1 control character but tab and newline (ESC, BEL, backspace, CR, DEL, CSI 0x9b,
 * …): a terminal acts on them instead of showing them. And the invisible format characters that
 * hide or reorder text without one: zero-width spaces and joiners, bidirectional overrides and
 * isolates (a command that reads backwards), line and paragraph separators, the soft hyphen.
 */
const HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g;

/** A hidden character as the escape a person can read: `\x1b` for ESC, `\u202e` for a right-to-left override. */
function escapeOf(hidden: string): string {
  const code = hidden.charCodeAt(0);
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

/**
 * Text an agent controls, made safe to print on a terminal: every control character but tab and
 * newline is shown as `\xNN` (`ls \x1b[8m; curl …`), so the agent cannot hide text (SGR 8), move
 * the cursor, ring the bell or write the clipboard (OSC 52) — a person reads what it sent. A
 * CRLF line end counts as a newline. Every CLI widget and command that prints event data, tool
 * output or sandbox logs goes through here (docs/cli.md "Agent text").
 */
export function visibleText(text: string): string {
  return text.replace(/\r\n/g, '\n').replace(HIDDEN, escapeOf);
}

/**
 * `JSON.stringify` for a terminal: JSON already writes C0 controls as `\u001b`, but leaves DEL
 * and the C1 range (CSI 0x9b …) raw; they are written as `\u009b` too (the same JSON value).
 */
export function visibleJson(value: unknown, indent?: number): string {
  // Outside strings JSON has no such characters: every one replaced is inside a string.
  return JSON.stringify(value, null, indent).replace(/[\u007f-\u009f]/g, (control) => `\\u${control.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
