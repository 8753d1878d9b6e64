/**
 * Sets `key` in a map of recently verified credentials holding at most `max` entries: past that,
 * the oldest entry goes (a Map iterates in insertion order). Internal to libs/auth.
 */
export function rememberAtMost<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  if (max <= 0) return;
  if (map.size >= max && !map.has(key)) map.delete(map.keys().next().value!);
  map.set(key, value);
}
