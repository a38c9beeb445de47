/**
 * Owner quotas. With P partitions and N members everyone gets ⌊P/N⌋ and P mod N of them one
 * more. Who gets the extra one is the only freedom, and it decides how much has to move: a member
 * holding h keeps min(h, quota), and an extra is worth one kept partition exactly when
 * h > ⌊P/N⌋. So the extras go to the largest holders (ties: smaller key; `keys` are sorted and
 * the sort is stable), which maximises Σ min(h, quota) and so minimises moves.
 */
export function ownerQuotas(
  keys: readonly string[],
  held: ReadonlyMap<string, number>,
  partitionCount: number,
): Map<string, number> {
  const floor = Math.floor(partitionCount / keys.length);
  const extras = partitionCount % keys.length;
  const quotas = new Map<string, number>(keys.map((key) => [key, floor]));
  const byHeld = [...keys].sort((a, b) => (held.get(b) ?? 0) - (held.get(a) ?? 0));
  for (const key of byHeld.slice(0, extras)) quotas.set(key, floor + 1);
  return quotas;
}
