// Sums the Vitest JSON reports of every project into one closing line: "N passed, N failed".
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

const reports = projectDirs.map((dir) => path.join(dir, 'test-results', 'vitest.json')).filter((file) => existsSync(file));
let passed = 0;
let failed = 0;
let skipped = 0;
for (const file of reports) {
  const report = JSON.parse(readFileSync(file, 'utf8'));
  passed += report.numPassedTests;
  failed += report.numFailedTests;
  skipped += report.numPendingTests + report.numTodoTests;
}
process.stdout.write(`\nTest reports: ${reports.length} projects\n${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}\n`);
if (reports.length === 0 || passed === 0 || failed > 0) process.exit(1);
