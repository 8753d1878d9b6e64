import { useEffect, useState } from 'react';
import type { WorkerView } from './worker-view.js';

/**
 * Re-renders when the view changes, at most every `intervalMs`: a replay of 100,000 events is
 * a few frames, not 100,000 renders. Ink (the CLI) and React DOM (the console) both use it.
 */
export function useWorkerView(view: WorkerView, intervalMs = 33): number {
  const [version, setVersion] = useState(view.version);
  useEffect(() => {
    const timer = setInterval(() => setVersion((shown) => (shown === view.version ? shown : view.version)), intervalMs);
    return () => clearInterval(timer);
  }, [view, intervalMs]);
  return version;
}
