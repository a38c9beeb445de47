/**
 * The series of `doyen_mailbox_depth`: one per top-level actor (`/user/orders`,
 * `/system/membership`), its depth the messages waiting in it and in every actor below it, so
 * an app with one actor per entity under one parent adds one series, not one per entity. At
 * most `maxSeries`: past that, the deepest keep their own and the rest are summed as `other`,
 * so even an app spawning a top-level actor per entity keeps the metric's cardinality bounded.
 */
export const MAILBOX_DEPTH_MAX_SERIES = 64;

/** The `path` of the series that sums the top-level actors past the cap. */
export const OTHER_ACTORS_PATH = 'other';

/** The top-level actor an actor belongs to: `/user/orders/o-17` → `/user/orders`. */
export function topLevelPathOf(path: string): string {
  const second = path.indexOf('/', 1);
  if (second < 0) return path;
  const third = path.indexOf('/', second + 1);
  return third < 0 ? path : path.slice(0, third);
}

export function mailboxDepthSeries(
  depths: Iterable<readonly [path: string, depth: number]>,
  maxSeries = MAILBOX_DEPTH_MAX_SERIES,
): { labels: { path: string }; value: number }[] {
  const byTop = new Map<string, number>();
  for (const [path, depth] of depths) {
    const top = topLevelPathOf(path);
    byTop.set(top, (byTop.get(top) ?? 0) + depth);
  }
  const series = (entries: Iterable<[string, number]>) =>
    [...entries].map(([path, value]) => ({ labels: { path }, value }));
  if (byTop.size <= maxSeries) return series(byTop);
  const deepestFirst = [...byTop].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  const kept = deepestFirst.slice(0, Math.max(0, maxSeries - 1));
  const rest = deepestFirst.slice(kept.length).reduce((sum, [, depth]) => sum + depth, 0);
  return [...series(kept), { labels: { path: OTHER_ACTORS_PATH }, value: rest }];
}
