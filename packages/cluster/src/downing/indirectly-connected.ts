/**
 * Members that are not cleanly partitioned away (Akka SBR's "indirectly connected"): they are
 * reported unreachable by someone yet still talk to the cluster. Two signs, as in Akka:
 * - a cycle in the unreachability graph: an observer that is itself reported unreachable, e.g.
 *   one broken link between two members that both see the rest; both ends go;
 * - a contradicted report: its subject is one this node still reaches (itself included), so the
 *   report is one observer's word against ours. The observer counts as part of the set.
 *
 * Akka downs both ends of every contradicted report. That lets one member take any others down
 * with it by reporting them (a liar naming every member but the decider downs the whole cluster,
 * and one naming the honest observers of a crash makes them a "cycle"), so here:
 * - two members this node reaches that report each other are a broken link: both go, as in Akka;
 * - the other contradicted reports are covered by the fewest members, greedily: the member in most
 *   of them first, the observer on a tie. One member reporting several that everyone else reaches
 *   is the common factor and goes alone; one member that several observers report goes alone; a
 *   single contradicted report takes its observer, whose word nobody confirms. Downing the
 *   observer always ends its reports (an observer's reports leave with it);
 * - the cycle rule applies only to members this node does not reach itself (a member it reaches
 *   is judged by the contradicted reports about it, not by being named).
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
  // this node reaches itself: a report about it is contradicted as surely as one about a peer
  const reached = (k: string) => k === selfKey || ownReachable.has(k);
  const reports = (o: string, s: string) => observations[s]?.includes(o) ?? false;
  const observers = new Set(Object.values(observations).flat());
  const result = new Set<string>();
  for (const o of observers) if (subjects.has(o) && !reached(o)) result.add(o);
  let contradicted: (readonly [observer: string, subject: string])[] = [];
  for (const s of subjects) {
    if (!reached(s)) continue;
    for (const o of observations[s] ?? []) {
      if (o !== selfKey && !result.has(o)) contradicted.push([o, s]);
    }
  }
  for (const [o, s] of contradicted) {
    if (reports(s, o)) {
      result.add(o);
      result.add(s);
    }
  }
  contradicted = contradicted.filter(([o, s]) => !result.has(o) && !result.has(s));
  for (const k of fewestCovering(contradicted)) result.add(k);
  return result;
}

/**
 * A small set of members that appears in every (observer, subject) pair: repeatedly the member in
 * most of the pairs left, an observer before a subject on a tie, then the lower key (every member
 * deciding from the same view picks the same). Greedy, so not always the very fewest, but one
 * observer reporting many, or many reporting one, is always found.
 */
export function fewestCovering(pairs: readonly (readonly [observer: string, subject: string])[]): string[] {
  let left = pairs;
  const chosen: string[] = [];
  while (left.length > 0) {
    const count = new Map<string, { n: number; observer: boolean }>();
    for (const [o, s] of left) {
      const co = count.get(o) ?? { n: 0, observer: false };
      count.set(o, { n: co.n + 1, observer: true });
      const cs = count.get(s) ?? { n: 0, observer: false };
      count.set(s, { n: cs.n + 1, observer: cs.observer });
    }
    const [pick] = [...count.entries()].sort(
      ([ka, a], [kb, b]) =>
        b.n - a.n || Number(b.observer) - Number(a.observer) || (ka < kb ? -1 : ka > kb ? 1 : 0),
    )[0]!;
    chosen.push(pick);
    left = left.filter(([o, s]) => o !== pick && s !== pick);
  }
  return chosen;
}
