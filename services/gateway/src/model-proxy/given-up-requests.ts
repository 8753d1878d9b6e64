/** How long an id said given up before its request was in flight is remembered (the two can cross). */
const EARLY_GIVE_UP_MS = 60_000;
/** The most such ids remembered at once (past it, one more is not: its answer may be read on). */
const EARLY_GIVE_UPS_REMEMBERED = 10_000;

/**
 * The model requests in flight on this replica by the id their sidecar gave them
 * (`MODEL_REQUEST_ID_HEADER`), so that one the agent gave up itself (an interrupt, a timeout of
 * its own) is let go at once when the sidecar says so, where one whose sidecar went away unsaid
 * is read on and kept for a re-ask (kept-answers.ts). An id said given up before its request
 * registered (the DELETE overtook it) is remembered a while, and the request let go as it comes.
 */
export interface GivenUpRequests {
  /** Registers a request in flight; the function it returns unregisters it. */
  register(workerId: string, requestId: string, giveUp: () => void): () => void;
  /** The sidecar says its agent gave the request up: it is let go. */
  giveUp(workerId: string, requestId: string): void;
}

export function createGivenUpRequests(rememberMs = EARLY_GIVE_UP_MS): GivenUpRequests {
  const inFlight = new Map<string, () => void>();
  const givenUpEarly = new Map<string, NodeJS.Timeout>();
  return {
    register(workerId, requestId, giveUp) {
      const key = `${workerId} ${requestId}`;
      const early = givenUpEarly.get(key);
      if (early) {
        clearTimeout(early);
        givenUpEarly.delete(key);
        queueMicrotask(giveUp);
        return () => {};
      }
      inFlight.set(key, giveUp);
      return () => {
        if (inFlight.get(key) === giveUp) inFlight.delete(key);
      };
    },
    giveUp(workerId, requestId) {
      const key = `${workerId} ${requestId}`;
      const giveUp = inFlight.get(key);
      if (giveUp) return giveUp();
      if (givenUpEarly.has(key) || givenUpEarly.size >= EARLY_GIVE_UPS_REMEMBERED) return;
      const forget = setTimeout(() => givenUpEarly.delete(key), rememberMs);
      forget.unref();
      givenUpEarly.set(key, forget);
    },
  };
}
