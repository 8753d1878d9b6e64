// Sums the Vitest JSON reports of every project into one closing line, "N passed, N failed", and
// names the ten slowest test files, so a slow suite is seen where it is.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const projectDirs = ['.', ...readdirSync('.')]
  .flatMap((dir) => (dir === 'node_modules' || (dir.startsWith('.') && dir !== '.') ? [] : [dir, ...subdirs(dir)]))
  .filter((dir, i, all) => all.indexOf(dir) === i);

function subdirs(dir) {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((d) => d.isDirectory() && d.name !== 'node_modules')
      .map((d) => path.join(dir, d.name));
  } catch {
    return [];
  }
}

// Each project's report of `npm test` (vitest.json) and of `npm run test:slow` (vitest-slow.json).
const reports = projectDirs
  .flatMap((dir) => ['vitest.json', 'vitest-slow.json'].map((name) => path.join(dir, 'test-results', name)))
  .filter((file) => existsSync(file));
const SLOWEST_SHOWN = 10;
let passed = 0;
let failed = 0;
let skipped = 0;
/** @type {{ file: string, ms: number }[]} */
const testFiles = [];
for (const file of reports) {
  const report = JSON.parse(readFileSync(file, 'utf8'));
  passed += report.numPassedTests;
  failed += report.numFailedTests;
  skipped += report.numPendingTests + report.numTodoTests;
  for (const result of report.testResults) testFiles.push({ file: path.relative('.', result.name), ms: result.endTime - result.startTime });
}
// A file that failed to load has no times; it is reported as failed, not as slow.
const slowest = testFiles
  .filter(({ ms }) => Number.isFinite(ms))
  .sort((a, b) => b.ms - a.ms)
  .slice(0, SLOWEST_SHOWN);
if (slowest.length > 0) {
  process.stdout.write(`\nSlowest test files:\n${slowest.map(({ file, ms }) => `${(ms / 1000).toFixed(1).padStart(7)} s  ${file}`).join('\n')}\n`);
}
process.stdout.write(`\nTest reports: ${reports.length} projects\n${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}\n`);
if (reports.length === 0 || passed === 0 || failed > 0) process.exit(1);
