// The rules: what in a doc counts as a reference to the repository, and when it holds.
//
// - A code span is a **file path** when it has no spaces and either starts with a top-level entry
//   of the repository and holds a `/` (`services/gateway/src/app.ts`, `libs/bus`, `.ci/run`), or
//   ends in a file extension (`decisions.ts`, `plugins/authentication.ts`: found as the end of a
//   path). `<placeholder>` and `*` match any name, `{a,b}` each of its choices, and a `#…` is
//   left out. It holds when a file or directory of the work tree matches, or, for a bare file
//   name other than a doc's, when a string of the code spells it (a file made at run time:
//   `outbox.jsonl`). Build outputs (a
//   `dist/` or `executable/` segment) are not in the tree and are not checked.
// - A code span is a **name** when it is an identifier, a dotted chain or a call
//   (`createWorkerDirectory`, `EventFollower.offer`, `serveRpc(nc, subject, handler)`) and looks
//   like code of ours: camelCase (`appendMany`), PascalCase of two words or more (`StoredEvent`,
//   `APIError`) or a SCREAMING_SNAKE constant (`ERROR_CODES`). Lower-case words (`append`,
//   `worker_id`, `control_response`) are the wire's and the prose's, and one-word capitals
//   (`Bash`, `Write`) are tool names: neither is checked. A chain whose head is ours is checked
//   whole (`EventFollower.offer`: `offer` too). A name holds when the sources declare it, when
//   it is a SCREAMING_SNAKE word the code spells (an environment variable it reads: `NO_COLOR`),
//   or when it is in the allow-list of names that are not ours (foreign-names.ts).
// - Every `SVC_…` (a setting, a stream) and `svc_…` (a table, a metric, an SQL function, a
//   bucket) word in a code span must be spelled somewhere in the code.
// - A link that is not a URL must lead to a file or directory of the repository, and its
//   `#anchor` to a heading of the Markdown file it names.
import path from 'node:path';
import { readMarkdown } from './markdown.js';
import type { Repository } from './repository.js';

/** One thing a doc names that does not exist, with the line it is on. */
export interface Problem {
  line: number;
  message: string;
}

const EXTENSION = /\.(?:ts|tsx|mts|cts|js|mjs|cjs|json|jsonl|md|sh|ya?ml|toml|tpl|css|html|png|svg)$/;
const SCREAMING = /^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$/;
const BUILD_OUTPUT = /(?:^|\/)(?:dist|executable)(?:\/|$)/;

/** `{a,b}` expanded into each choice (one level of braces, as the docs write them). */
export function expandBraces(text: string): string[] {
  const match = /\{([^{}]*,[^{}]*)\}/.exec(text);
  if (!match) return [text];
  return match[1]!.split(',').flatMap((choice) => expandBraces(text.slice(0, match.index) + choice + text.slice(match.index + match[0].length)));
}

export interface PathPattern {
  pattern: string;
  rooted: boolean;
}

/**
 * The path patterns a code span names, or none when it is not a path. A pattern is anchored at
 * the root (`rooted`) or found as the end of a path.
 */
export function pathsOf(span: string, topLevel: ReadonlySet<string>): PathPattern[] {
  if (/[\s…'"`=|()]|:\/\//.test(span)) return [];
  const text = span.replace(/#.*$/, '').replace(/^\.\//, '').replace(/\/$/, '');
  const rooted = text.includes('/') && topLevel.has(text.split('/')[0]!);
  if (!rooted && (/^[/$~@.\\-]/.test(text) || !EXTENSION.test(text))) return [];
  if (BUILD_OUTPUT.test(text)) return [];
  return expandBraces(text).map((pattern) => ({ pattern: pattern.replace(/<[^>]*>/g, '*'), rooted }));
}

const escapeRegExp = (text: string) => text.replace(/[.+^${}()|[\]\\?]/g, '\\$&');

/** Whether a file or directory of the repository matches a path pattern. */
export function pathExists(pattern: PathPattern, files: readonly string[]): boolean {
  const body = escapeRegExp(pattern.pattern).replace(/\*/g, '[^/]*');
  const regex = new RegExp(`${pattern.rooted ? '^' : '(?:^|/)'}${body}(?:/.*)?$`);
  return files.some((file) => regex.test(file));
}

/** Whether an identifier looks like code of ours (the header's rule). */
export function looksLikeOurs(identifier: string): boolean {
  if (/^[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*$/.test(identifier)) return true;
  if (/^[A-Z][A-Za-z0-9]*[A-Z][A-Za-z0-9]*$/.test(identifier) && /[a-z]/.test(identifier)) return true;
  return SCREAMING.test(identifier) && !identifier.startsWith('SVC_');
}

const CHAIN = /^([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)(?:<.*>)?(?:\(.*)?$/s;

/** The names a code span mentions as code, or none. */
export function namesOf(span: string): string[] {
  const chain = CHAIN.exec(span)?.[1];
  if (chain === undefined) return [];
  const parts = chain.split('.');
  if (parts.length > 1 && EXTENSION.test(chain)) return []; // a file name (`nats.js`), not a member
  return looksLikeOurs(parts[0]!) ? parts : parts.filter(looksLikeOurs);
}

/** The `SVC_…` and `svc_…` words of a code span. */
const spelledOf = (span: string): string[] => span.match(/\b(?:SVC|svc)_\w*[A-Za-z0-9]/g) ?? [];

export interface CheckContext {
  repository: Repository;
  /** Names that are not ours, and why a doc names them. */
  foreignNames: ReadonlyMap<string, string>;
  /** Reads a Markdown file of the repository (for links' anchors). */
  readDoc: (file: string) => string;
}

/** What is wrong with one code span: a path is checked as a path, anything else for names and spelled words. */
function spanProblems(text: string, context: CheckContext): string[] {
  const { repository, foreignNames } = context;
  const paths = pathsOf(text, repository.topLevel);
  if (paths.length > 0) {
    const holds = (pattern: PathPattern) =>
      pathExists(pattern, repository.files) || (!/[/*]|\.md$/.test(pattern.pattern) && repository.spelled.has(pattern.pattern));
    return paths
      .filter((pattern) => !holds(pattern))
      .map(({ pattern }) => `\`${pattern}\` names no file or directory of the repository (nor a file the code makes)`);
  }
  const problems: string[] = [];
  for (const name of namesOf(text)) {
    const spelledConstant = SCREAMING.test(name) && repository.spelled.has(name);
    if (!repository.declared.has(name) && !spelledConstant && !foreignNames.has(name)) {
      problems.push(`\`${name}\` is declared nowhere in the sources (and is not in foreign-names.ts)`);
    }
  }
  for (const word of spelledOf(text)) {
    if (!repository.spelled.has(word)) problems.push(`\`${word}\` is spelled nowhere in the code`);
  }
  return problems;
}

/** What is wrong with one link of the doc `doc` (a path from the root). */
function linkProblem(doc: string, target: string, context: CheckContext): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined; // a URL
  const [file = '', anchor] = target.split('#', 2);
  const resolved = file === '' ? doc : path.posix.normalize(path.posix.join(path.posix.dirname(doc), decodeURI(file))).replace(/\/$/, '');
  if (resolved.startsWith('../') || resolved === '..') return `link \`${target}\` leads outside the repository`;
  const { files } = context.repository;
  const isFile = file === '' || files.includes(resolved);
  if (!isFile && !files.some((each) => each.startsWith(`${resolved}/`))) return `link \`${target}\`: the repository has no ${resolved}`;
  if (anchor === undefined || anchor === '' || !isFile || !resolved.endsWith('.md')) return undefined;
  if (!readMarkdown(context.readDoc(resolved)).anchors.has(anchor)) return `link \`${target}\`: ${resolved} has no heading with the anchor #${anchor}`;
  return undefined;
}

/** Everything a doc names that does not exist. */
export function docProblems(doc: string, markdown: string, context: CheckContext): Problem[] {
  const { spans, links } = readMarkdown(markdown);
  const problems: Problem[] = [];
  for (const span of spans) for (const message of spanProblems(span.text, context)) problems.push({ line: span.line, message });
  for (const link of links) {
    const message = linkProblem(doc, link.target, context);
    if (message !== undefined) problems.push({ line: link.line, message });
  }
  return problems.sort((a, b) => a.line - b.line);
}
