// Builds svc-sidecar as one file and as a single executable for the sandbox (linux/amd64 here):
//   executable/svc-sidecar.cjs  every module bundled (esbuild), workspace packages from their source
//   executable/svc-sidecar      a copy of this node binary with the bundle injected (Node's single
//                               executable application: node --experimental-sea-config + postject)
// Not in dist/: that is the build target's output, which nx restores from its cache.
// The session service copies executable/svc-sidecar into each sandbox; it needs nothing installed there.
import { execFileSync } from 'node:child_process';
import { copyFileSync, chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'executable');
mkdirSync(dist, { recursive: true });
const bundle = path.join(dist, 'svc-sidecar.cjs');

await build({
  entryPoints: [path.join(root, 'src/main.ts')],
  bundle: true,
  platform: 'node',
  target: 'node20',
  // A single executable runs one CommonJS script.
  format: 'cjs',
  outfile: bundle,
  conditions: ['@svc/source'],
  legalComments: 'none',
  logLevel: 'warning',
});

const blob = path.join(dist, 'svc-sidecar.blob');
const seaConfig = path.join(dist, 'sea-config.json');
writeFileSync(seaConfig, JSON.stringify({ main: bundle, output: blob, disableExperimentalSEAWarning: true }));
execFileSync(process.execPath, ['--experimental-sea-config', seaConfig], { stdio: 'inherit' });

const executable = path.join(dist, 'svc-sidecar');
copyFileSync(process.execPath, executable);
chmodSync(executable, 0o755);
const postject = path.join(path.dirname(createRequire(import.meta.url).resolve('postject/package.json')), 'dist/cli.js');
execFileSync(process.execPath, [postject, executable, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2'], {
  stdio: 'inherit',
});
process.stdout.write(`built ${path.relative(process.cwd(), bundle)} and ${path.relative(process.cwd(), executable)}\n`);
