/** `svc`: the command line. `runCli` runs it; the attach renderer's pieces are exported for tests and embedding. */
export { runCli, COMMANDS, MAIN_HELP } from './cli.js';
export { EXIT } from './exit-codes.js';
