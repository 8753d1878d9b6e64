// What the repository holds, read once: its files (as git sees the work tree: tracked and new,
// ignored ones left out), the names its sources declare (and the keys of its YAML: the Helm
// chart's values), and the words its code spells: `SVC_*` / `svc_*`, environment variables, and
// the file names in its strings (a file the code makes at run time: the sidecar's `outbox.jsonl`).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPOSITORY_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** This project: its allow-list and test inputs spell names that must not count as the code's. */
const SELF = 'deploy/doc-tests/';

const SOURCE = /\.(?:ts|tsx|mts|cts|js|mjs|cjs)$/;
/** Files whose text is code or configuration, where a setting's or a table's name is spelled. */
const CODE = /(?:\.(?:ts|tsx|mts|cts|js|mjs|cjs|json|ya?ml|tpl|toml|sh|env|sql|html)|Dockerfile|\/run)$/;

export interface Repository {
  /** Every file, as a path from the root with `/` separators. */
  files: string[];
  /** The top-level entries (`services`, `libs`, `.ci`, `package.json`, …). */
  topLevel: Set<string>;
  /** Names declared in the sources: functions, classes, types, constants, members, export aliases. */
  declared: Set<string>;
  /** Every `SVC_…`, `svc_…` and SCREAMING_SNAKE word in the code, and every file name its strings spell (`outbox.jsonl`). */
  spelled: Set<string>;
}

/** The work tree's files: tracked ones still there, and new ones git does not ignore. */
function listFiles(root: string): string[] {
  const output = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20 });
  const files = new Set(output.split('\0').filter((file) => file !== '' && existsSync(path.join(root, file))));
  return [...files].sort();
}

const DECLARATION = /\b(?:function\*?|class|interface|type|enum|namespace|const|let|var)\s+([A-Za-z_$][\w$]*)/g;
/** A member at the start of a line: `name(`, `name:`, `name =`, `name?:`, with modifiers before it. */
const MEMBER =
  /^[ \t]*(?:(?:export|public|private|protected|static|readonly|async|override|declare|abstract|get|set)\s+)*\*?([A-Za-z_$][\w$]*)\??\s*(?:<[^>\n]*>)?\s*[:(=]/gm;
/** `export { a as b }`, `import { a as b }`: the name it goes by. */
const ALIAS = /\bas\s+([A-Za-z_$][\w$]*)/g;
/** Shorthand members of an object literal or a destructuring (`{ get, known, checkWorkerToken }`). */
const SHORTHAND = /[{,]\s*([A-Za-z_$][\w$]*)\s*(?=[,}])/g;
/** A schema's title: the name the wire and the OpenAPI document give it (`APIError`). */
const TITLE = /\btitle:\s*['"]([A-Za-z_$][\w$]*)['"]/g;

/** The names a source file declares (a regular reading, not a compiler's: enough to tell a name that exists from one that does not). */
export function declaredNames(source: string): string[] {
  const names: string[] = [];
  for (const pattern of [DECLARATION, MEMBER, ALIAS, SHORTHAND, TITLE]) for (const match of source.matchAll(pattern)) names.push(match[1]!);
  return names;
}

/** The keys of a YAML file (`existingSecret:`), which a doc names as the chart's settings. */
export function yamlKeys(yaml: string): string[] {
  return [...yaml.matchAll(/^[ \t]*(?:- )?([A-Za-z_][\w-]*):/gm)].map((match) => match[1]!);
}

/**
 * The words of a text a doc may name without their being declared: `SVC_…` and `svc_…` words,
 * SCREAMING_SNAKE words (an environment variable the code reads, `NO_COLOR`), and the file names
 * its string literals spell (`'outbox.jsonl'`, `` `${dir}/agent.pgid` ``).
 */
export function spelledWords(text: string): string[] {
  const words: string[] = [...(text.match(/\b(?:SVC_|svc_|[A-Z][A-Z0-9]*_)\w*[A-Za-z0-9]/g) ?? [])];
  for (const literal of text.matchAll(/(['"`])([^'"`\n]*)\1/g)) words.push(...(literal[2]!.match(/[\w-]+(?:\.[\w-]+)*\.[a-z]{1,5}\b/g) ?? []));
  return words;
}

/** Reads the repository at `root`. */
export function readRepository(root: string = REPOSITORY_ROOT): Repository {
  const files = listFiles(root);
  const declared = new Set<string>();
  const spelled = new Set<string>();
  for (const file of files) {
    if (file.startsWith(SELF) || !CODE.test(file) || file.endsWith('package-lock.json')) continue;
    const text = readFileSync(path.join(root, file), 'utf8');
    if (SOURCE.test(file)) for (const name of declaredNames(text)) declared.add(name);
    if (/\.ya?ml$/.test(file)) for (const key of yamlKeys(text)) declared.add(key);
    for (const word of spelledWords(text)) spelled.add(word);
  }
  return { files, topLevel: new Set(files.map((file) => file.split('/')[0]!)), declared, spelled };
}
