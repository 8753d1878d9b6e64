// Bundles `svc` into one file, dist/svc.mjs (esbuild): loading one file instead of hundreds of
// small modules (Ink, React, TypeBox…) is most of what keeps `svc attach`'s first screen within
// its target (docs/benchmarks.md#attach-replay). `bin.svc` points at it.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

await build({
  entryPoints: [path.join(root, 'src/main.ts')],
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  outfile: path.join(root, 'dist/svc.mjs'),
  conditions: ['@svc/source'],
  // Ink connects to React DevTools only when DEV=true; svc never does, so an empty stand-in.
  plugins: [
    {
      name: 'no-devtools',
      setup(builder) {
        builder.onResolve({ filter: /^react-devtools-core$/ }, () => ({ path: 'react-devtools-core', namespace: 'no-devtools' }));
        builder.onLoad({ filter: /.*/, namespace: 'no-devtools' }, () => ({
          contents: 'export default { initialize() {}, connectToDevTools() {} };',
          loader: 'js',
        }));
      },
    },
  ],
  // Some bundled dependencies are CommonJS and call require().
  banner: { js: "import { createRequire as __svcCreateRequire } from 'node:module'; const require = __svcCreateRequire(import.meta.url);" },
  define: { 'process.env.NODE_ENV': '"production"' },
  legalComments: 'none',
  logLevel: 'warning',
});
