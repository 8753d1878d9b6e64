import { useEffect, useState } from 'react';
import type { AttachModel } from './model.js';

/**
 * Re-renders when the model changes, at most every `intervalMs`: a replay of 100,000 events is
 * a few frames, not 100,000 renders.
 */
export function useModel(model: AttachModel, intervalMs = 33): number {
  const [version, setVersion] = useState(model.version);
  useEffect(() => {
    const timer = setInterval(() => setVersion((shown) => (shown === model.version ? shown : model.version)), intervalMs);
    return () => clearInterval(timer);
  }, [model, intervalMs]);
  return version;
}
