/** Whether colours may be used: not when `NO_COLOR` is set (https://no-color.org), nor when output is not a terminal. */
export function colourEnabled(env: NodeJS.ProcessEnv = process.env, stream: NodeJS.WriteStream = process.stdout): boolean {
  if (env['NO_COLOR'] !== undefined && env['NO_COLOR'] !== '') return false;
  return stream.isTTY === true || env['FORCE_COLOR'] !== undefined;
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** A plain table: a header row and aligned columns. */
export function printTable(columns: string[], rows: string[][]): void {
  const widths = columns.map((column, index) => Math.max(column.length, ...rows.map((row) => (row[index] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, index) => cell.padEnd(widths[index]!))
      .join('  ')
      .trimEnd();
  process.stdout.write(`${[line(columns), ...rows.map(line)].join('\n')}\n`);
}

/**
 * A progress line on stderr for work that may take more than a second: nothing if it ends
 * sooner, else "… (Ns)" ticking, then cleared. Not on a non-terminal stderr.
 */
export async function withProgress<T>(label: string, work: Promise<T>): Promise<T> {
  if (!process.stderr.isTTY) return work;
  const started = Date.now();
  let shown = false;
  const timer = setInterval(() => {
    shown = true;
    process.stderr.write(`\r${label} (${Math.round((Date.now() - started) / 1000)}s)`);
  }, 1000);
  try {
    return await work;
  } finally {
    clearInterval(timer);
    if (shown) process.stderr.write('\r\x1b[2K');
  }
}
