import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { SIDECAR_STATE_MARKS } from '@svc/protocol';

/**
 * Marks the sidecar started in its state directory, for its supervisor: a sidecar that exits
 * started but not finished died before its work was done, and is started again.
 */
export function markStarted(stateDir: string): void {
  writeFileSync(path.join(stateDir, SIDECAR_STATE_MARKS.started), `${new Date().toISOString()}\n`);
  rmSync(path.join(stateDir, SIDECAR_STATE_MARKS.finished), { force: true });
}

/** Marks the sidecar's work done (its agent gone for good, its events delivered): its supervisor does not start it again. */
export function markFinished(stateDir: string, code: number): void {
  writeFileSync(path.join(stateDir, SIDECAR_STATE_MARKS.finished), `${code}\n`);
}
