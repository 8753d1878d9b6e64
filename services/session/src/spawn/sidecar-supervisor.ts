import { SIDECAR_STATE_MARKS } from '@svc/protocol';

/** How many times in a row a sidecar that died is started again, the pause growing by a second each time. */
const SIDECAR_RESTARTS = 5;

/**
 * The sandbox's program when it has a sidecar (docs/sidecar.md, "Started again"): a POSIX shell
 * that runs the sidecar (`$1`, its state directory `$2`) and starts it again when it exits
 * after it started (`started` in its state directory) but before its work was done (no
 * `finished`): killed, or crashed. The sidecar picks up from its state: its unsent events go
 * out, the agent the dead one left is stopped, a conversation waits suspended for a message that
 * resumes it, a one-shot run starts its agent again. A stop (SIGTERM,
 * or SIGINT) goes to the sidecar, which drains, and is never answered with a restart. The script
 * is a constant: the paths are arguments, never spliced into code. The shell costs the sandbox
 * far less memory than a supervisor of Node would.
 */
const SIDECAR_SUPERVISOR_SCRIPT = [
  `started="$2/${SIDECAR_STATE_MARKS.started}"; finished="$2/${SIDECAR_STATE_MARKS.finished}"; pid=; stopping=; tries=0;`,
  'trap \'stopping=1; [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null\' TERM INT;',
  'while :; do',
  '"$1" & pid=$!;',
  // A trap cuts `wait` short: wait again until the sidecar has really exited.
  'while :; do wait "$pid"; code=$?; kill -0 "$pid" 2>/dev/null || break; done;',
  `if [ -n "$stopping" ] || [ ! -f "$started" ] || [ -f "$finished" ] || [ "$tries" -ge ${SIDECAR_RESTARTS} ]; then exit "$code"; fi;`,
  'tries=$((tries + 1));',
  `echo "svc-sidecar-supervisor: the sidecar exited ($code) before its work was done; starting it again ($tries of ${SIDECAR_RESTARTS})" >&2;`,
  'sleep "$tries";',
  'done',
  // One line: a Kubernetes sandbox's start file carries one argument a line.
].join(' ');

/** The argv that runs `sidecar` under the supervisor. */
export const supervisedSidecar = (sidecar: string, stateDir: string): string[] => [
  '/bin/sh',
  '-c',
  SIDECAR_SUPERVISOR_SCRIPT,
  'svc-sidecar-supervisor',
  sidecar,
  stateDir,
];
