/**
 * Hands freed partitions to their previous backups, as many as the quotas allow: a maximum
 * bipartite matching (freed partitions to members, each member taking up to its room) found
 * with augmenting paths. A promoted backup already holds the data, so the partition is served
 * again without a transfer, as in Hazelcast. Only who receives what changes, never how many move.
 */
export function promoteBackups(
  freed: readonly number[],
  candidates: (partition: number) => readonly string[],
  room: ReadonlyMap<string, number>,
): Map<number, string> {
  const match = new Map<number, string>();
  const holds = new Map<string, number[]>();
  const assign = (p: number, key: string) => {
    const old = match.get(p);
    if (old !== undefined)
      holds.set(
        old,
        holds.get(old)!.filter((q) => q !== p),
      );
    match.set(p, key);
    holds.set(key, [...(holds.get(key) ?? []), p]);
  };
  // Depth-first augmenting path; `seen` members are not revisited within a phase, which bounds
  // the recursion by the number of members.
  const place = (p: number, seen: Set<string>): boolean => {
    for (const key of candidates(p)) {
      if (seen.has(key) || match.get(p) === key || (room.get(key) ?? 0) === 0) continue;
      seen.add(key);
      const held = holds.get(key) ?? [];
      if (held.length < room.get(key)! || held.some((q) => place(q, seen))) {
        assign(p, key);
        return true;
      }
    }
    return false;
  };
  // A phase without progress proves the matching maximum: nothing changed, so every search
  // it blocked early would have failed anyway.
  for (let progress = true; progress; ) {
    progress = false;
    const seen = new Set<string>();
    for (const p of freed) if (!match.has(p) && place(p, seen)) progress = true;
  }
  return match;
}
