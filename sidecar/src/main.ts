import { SIDECAR_NOT_IMPLEMENTED } from './index.js';

process.stderr.write(`${SIDECAR_NOT_IMPLEMENTED}\n`);
process.exitCode = 2;
