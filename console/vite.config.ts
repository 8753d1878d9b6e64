import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

/**
 * The console is plain static files (`dist/`), served by the gateway at `/` beside the API. The
 * workspace's libraries are compiled from their sources (`@svc/source`), as the tests read them.
 */
export default defineConfig({
  plugins: [react()],
  resolve: { conditions: ['@svc/source'] },
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: true, target: 'es2022' },
});
