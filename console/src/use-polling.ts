import { useEffect, useState } from 'react';

/** How often a page reads its list again (statuses and open approvals move on their own). */
const REFRESH_MS = 2000;

/**
 * `load` now and every `intervalMs` while the page shows (again whenever `deps` change); the
 * latest value, and the latest failure's message until a read succeeds again.
 */
export function usePolling<T>(load: () => Promise<T>, deps: readonly unknown[], intervalMs = REFRESH_MS): { value: T | undefined; error: string | undefined } {
  const [value, setValue] = useState<T>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    let stopped = false;
    const read = async () => {
      try {
        const next = await load();
        if (stopped) return;
        setValue(next);
        setError(undefined);
      } catch (err) {
        if (!stopped) setError(err instanceof Error ? err.message : String(err));
      }
    };
    void read();
    const timer = setInterval(() => void read(), intervalMs);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
    // `deps` are the caller's: what `load` reads.
  }, deps);
  return { value, error };
}
