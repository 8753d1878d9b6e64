import { markEdits, tokenize, type HunkData, type HunkTokens } from 'react-diff-view';
import { refractor } from 'refractor';
import docker from 'refractor/docker';
import jsx from 'refractor/jsx';
import toml from 'refractor/toml';
import tsx from 'refractor/tsx';

// refractor's common languages, and those of this repository's own kind (TSX, TOML templates, Dockerfiles).
refractor.register(jsx);
refractor.register(tsx);
refractor.register(toml);
refractor.register(docker);

/** A file's language by its name's ending, as refractor names it. */
const LANGUAGE_OF_EXTENSION: Readonly<Record<string, string>> = {
  ts: 'typescript',
  mts: 'typescript',
  cts: 'typescript',
  tsx: 'tsx',
  js: 'javascript',
  mjs: 'javascript',
  cjs: 'javascript',
  jsx: 'jsx',
  json: 'json',
  css: 'css',
  scss: 'scss',
  sass: 'sass',
  less: 'less',
  html: 'markup',
  htm: 'markup',
  xml: 'markup',
  svg: 'markup',
  md: 'markdown',
  markdown: 'markdown',
  py: 'python',
  rb: 'ruby',
  go: 'go',
  rs: 'rust',
  java: 'java',
  kt: 'kotlin',
  kts: 'kotlin',
  c: 'c',
  h: 'c',
  cc: 'cpp',
  cpp: 'cpp',
  cxx: 'cpp',
  hpp: 'cpp',
  cs: 'csharp',
  swift: 'swift',
  m: 'objectivec',
  php: 'php',
  pl: 'perl',
  lua: 'lua',
  r: 'r',
  sql: 'sql',
  sh: 'bash',
  bash: 'bash',
  zsh: 'bash',
  yml: 'yaml',
  yaml: 'yaml',
  toml: 'toml',
  ini: 'ini',
  cfg: 'ini',
  vb: 'vbnet',
  diff: 'diff',
  patch: 'diff',
};

/** Files known by their whole name. */
const LANGUAGE_OF_NAME: Readonly<Record<string, string>> = { dockerfile: 'docker', makefile: 'makefile', gnumakefile: 'makefile' };

/** The language to highlight a file in, by its path; none for a kind refractor here does not know. */
export function languageOfPath(path: string): string | undefined {
  const name = (path.split('/').at(-1) ?? path).toLowerCase();
  const dot = name.lastIndexOf('.');
  const language = LANGUAGE_OF_NAME[name] ?? (dot > 0 ? LANGUAGE_OF_EXTENSION[name.slice(dot + 1)] : undefined);
  return language && refractor.registered(language) ? language : undefined;
}

/**
 * react-diff-view's `tokenize` wants refractor 3's `highlight`, which answered the nodes; refractor
 * 4 and later answer a root holding them.
 */
const refractorOfReactDiffView = { highlight: (value: string, language: string) => refractor.highlight(value, language).children };

/**
 * The tokens of a file's hunks for the diff view: its language highlighted (when known), the
 * words that changed within a changed line marked. What cannot be tokenized is shown plain.
 */
export function tokensOf(hunks: HunkData[], path: string): HunkTokens | undefined {
  const language = languageOfPath(path);
  const enhancers = [markEdits(hunks, { type: 'block' })];
  try {
    return language ? tokenize(hunks, { highlight: true, refractor: refractorOfReactDiffView, language, enhancers }) : tokenize(hunks, { enhancers });
  } catch {
    return undefined;
  }
}
