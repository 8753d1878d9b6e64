/**
 * The model requests in flight on this replica by the id their sidecar gave them
 * (`MODEL_REQUEST_ID_HEADER`), so that one the agent gave up itself (an interrupt, a timeout of
 * its own) is let go at once when the sidecar says so, where one whose sidecar went away unsaid
 * is read on and kept for a re-ask (kept-answers.ts).
 */
export interface GivenUpRequests {
  /** Registers a request in flight; the function it returns unregisters it. */
  register(workerId: string, requestId: string, giveUp: () => void): () => void;
  /** The sidecar says its agent gave the request up: it is let go (false when this replica has no such request). */
  giveUp(workerId: string, requestId: string): boolean;
}

export function createGivenUpRequests(): GivenUpRequests {
  const inFlight = new Map<string, () => void>();
  return {
    register(workerId, requestId, giveUp) {
      const key = `${workerId} ${requestId}`;
      inFlight.set(key, giveUp);
      return () => {
        if (inFlight.get(key) === giveUp) inFlight.delete(key);
      };
    },
    giveUp(workerId, requestId) {
      const giveUp = inFlight.get(`${workerId} ${requestId}`);
      giveUp?.();
      return giveUp !== undefined;
    },
  };
}
