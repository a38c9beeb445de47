/**
 * Members that are not cleanly partitioned away (Akka SBR's "indirectly connected"): they are
 * reported unreachable by someone yet still talk to the cluster. Two signs, as in Akka:
 * - an observer that is itself reported unreachable (a cycle in the unreachability graph,
 *   e.g. one broken link between two members that both see the rest);
 * - a subject this node still reaches directly: unreachable for some, reachable for us; the
 *   observers that report it go with it.
 * They are downed first; the strategy then decides over the clean rest.
 */
export function indirectlyConnected(
  observations: Readonly<Record<string, readonly string[]>>,
  selfKey: string,
  ownReachable: ReadonlySet<string>,
): Set<string> {
  const subjects = new Set(
    Object.entries(observations)
      .filter(([, o]) => o.length > 0)
      .map(([s]) => s),
  );
  const observers = new Set(Object.values(observations).flat());
  const result = new Set<string>();
  for (const o of observers) if (subjects.has(o)) result.add(o);
  for (const s of subjects) {
    if (s !== selfKey && ownReachable.has(s)) {
      result.add(s);
      for (const o of observations[s] ?? []) if (o !== selfKey) result.add(o);
    }
  }
  return result;
}
