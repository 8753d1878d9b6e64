/** POSIX shell words of a command line (quotes and backslashes), or undefined for anything fancier. */
function shellWords(line: string): string[] | undefined {
  const words: string[] = [];
  let word: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) return undefined;
      word = (word ?? '') + line.slice(i + 1, end);
      i = end;
    } else if (c === '"') {
      let j = i + 1;
      let part = '';
      for (; j < line.length && line[j] !== '"'; j++) part += line[j] === '\\' && /["\\$`]/.test(line[j + 1] ?? '') ? line[++j] : line[j];
      if (j >= line.length) return undefined;
      word = (word ?? '') + part;
      i = j;
    } else if (c === '\\') {
      word = (word ?? '') + (line[++i] ?? '');
    } else if (/\s/.test(c)) {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else {
      word = (word ?? '') + c;
    }
  }
  if (word !== undefined) words.push(word);
  return words;
}

/**
 * The command line the model asked for. Codex reports it wrapped in its shell
 * (`/bin/bash -c 'rm -rf data'`); rules like `command_execution(rm *)` are about what is inside.
 */
export function modelCommandOf(command: string): string {
  const words = shellWords(command);
  if (words?.length === 3 && /(^|\/)(ba|z|da)?sh$/.test(words[0]!) && /^-l?c$/.test(words[1]!)) return words[2]!;
  return command;
}

/** A system shell: by its name alone, or in /bin or /usr/bin (`./bash` is a program of the workspace's). */
const SYSTEM_SHELL = /^(\/usr)?(\/bin\/)?(ba|z|da)?sh$/;

/** The command an argv runs, as a rule reads it: what a system shell's `-c` runs, else its words joined. */
export function commandOfArgv(argv: readonly string[]): string {
  if (argv.length === 3 && SYSTEM_SHELL.test(argv[0]!) && /^-l?c$/.test(argv[1]!)) return argv[2]!;
  return argv.join(' ');
}
