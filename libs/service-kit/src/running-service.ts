/** What a service's `start(deps)` returns: a handle to stop it (it does not close what it was given). */
export interface RunningService {
  stop(): Promise<void>;
}
