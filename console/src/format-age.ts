/** How long ago `since` was, in the largest unit that fits: `12 s`, `5 min`, `3 h`, `2 d`. */
export function formatAge(since: string): string {
  const seconds = Math.max(0, Math.round((Date.now() - Date.parse(since)) / 1000));
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  if (seconds < 86_400) return `${Math.round(seconds / 3600)} h`;
  return `${Math.round(seconds / 86_400)} d`;
}
