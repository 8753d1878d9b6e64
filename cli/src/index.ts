/** `svc`: the command line. Commands arrive with the CLI issue; until then it says so. */
export const CLI_NOT_IMPLEMENTED =
  'svc: the command line is not implemented yet (attach, sessions, logs, login, status, up arrive with the CLI issue).\n' +
  'To start the local stack now, run `npm run up` in the repository.';
