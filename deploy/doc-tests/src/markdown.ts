// What a Markdown document points at: its inline code spans, its links and its headings' anchors.
// A small reader of the CommonMark rules these docs use, not a full parser: fenced blocks are
// examples (a config, a shell session) and are left out; everything else is read.

/** An inline code span, its text with line breaks as spaces, and the line it starts on. */
export interface CodeSpan {
  text: string;
  line: number;
}

/** A link or image target as written (`./protocol.md#sources`), and its line. */
export interface Link {
  target: string;
  line: number;
}

export interface MarkdownReferences {
  spans: CodeSpan[];
  links: Link[];
  /** The anchors its headings get on GitHub (`#the-built-in-issuer-local-stack`). */
  anchors: Set<string>;
}

const FENCE = /^\s*(`{3,}|~{3,})/;

/** The document with every fenced block's lines emptied, so that offsets and line numbers stay. */
export function withoutFences(markdown: string): string {
  let fence: string | undefined;
  return markdown
    .split('\n')
    .map((line) => {
      const opening = FENCE.exec(line)?.[1];
      if (fence === undefined) {
        if (opening === undefined) return line;
        fence = opening;
        return '';
      }
      // A fence closes with a run of the same character at least as long as the one that opened it.
      if (opening !== undefined && opening[0] === fence[0] && opening.length >= fence.length && line.trim() === opening) fence = undefined;
      return '';
    })
    .join('\n');
}

const lineAt = (text: string, offset: number) => text.slice(0, offset).split('\n').length;

/**
 * The inline code spans of a text without fences, and the text with each span blanked out (so
 * that a link written inside backticks is not taken for a link). A span opens with a run of
 * backticks and closes with the next run of the same length.
 */
export function codeSpans(text: string): { spans: CodeSpan[]; rest: string } {
  const spans: CodeSpan[] = [];
  let rest = '';
  let at = 0;
  const runs = /`+/g;
  for (let open = runs.exec(text); open; open = runs.exec(text)) {
    const closing = new RegExp(`(?<!\`)${open[0]}(?!\`)`, 'g');
    closing.lastIndex = open.index + open[0].length;
    const close = closing.exec(text);
    if (!close) continue; // an unmatched run is literal backticks
    const inner = text.slice(open.index + open[0].length, close.index);
    spans.push({ text: inner.replace(/\s*\n\s*/g, ' ').trim(), line: lineAt(text, open.index) });
    rest += text.slice(at, open.index) + text.slice(open.index, close.index + close[0].length).replace(/[^\n]/g, ' ');
    at = close.index + close[0].length;
    runs.lastIndex = at;
  }
  return { spans, rest: rest + text.slice(at) };
}

/** Inline links and images, `[text](target)` and `[text](target "title")`, and reference definitions. */
export function links(text: string): Link[] {
  const found: Link[] = [];
  const inline = /!?\[(?:[^[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g;
  for (let match = inline.exec(text); match; match = inline.exec(text)) found.push({ target: match[1]!, line: lineAt(text, match.index) });
  const definition = /^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/gm;
  for (let match = definition.exec(text); match; match = definition.exec(text)) found.push({ target: match[1]!, line: lineAt(text, match.index) });
  return found;
}

/** The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens. */
export function headingAnchor(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
    .replace(/ /g, '-');
}

/** Every heading's anchor; a repeated heading gets `-1`, `-2`, … as on GitHub. */
export function anchors(textWithoutFences: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const match of textWithoutFences.matchAll(/^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/gm)) {
    const base = headingAnchor(match[1]!);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.add(count === 0 ? base : `${base}-${count}`);
  }
  return result;
}

/** What a document points at. */
export function readMarkdown(markdown: string): MarkdownReferences {
  const text = withoutFences(markdown);
  const { spans, rest } = codeSpans(text);
  return { spans, links: links(rest), anchors: anchors(text) };
}
