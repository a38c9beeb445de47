/**
 * The length of `JSON.stringify(value)`, with the length of every object and array kept per
 * object. The console's history measures each frame by its JSON (its size cap), and a member's
 * change keeps the rows, machines and partition lists it did not touch as the same objects: so
 * a new view of fifty members costs a few lookups, not the ~25 KB stringify it cost on every
 * update (most of the serving node's CPU per update at 50 nodes). Only for values never changed
 * once measured (the console's views and frames are not).
 */
const lengths = new WeakMap<object, number>();

export function jsonLength(value: unknown): number {
  if (value === null || typeof value !== 'object') return JSON.stringify(value)?.length ?? 0;
  const kept = lengths.get(value);
  if (kept !== undefined) return kept;
  let n = 2;
  if (Array.isArray(value)) {
    n += Math.max(0, value.length - 1);
    for (const x of value) n += omitted(x) ? 4 : jsonLength(x);
  } else {
    let first = true;
    for (const [k, v] of Object.entries(value)) {
      if (omitted(v)) continue;
      n += (first ? 0 : 1) + JSON.stringify(k).length + 1 + jsonLength(v);
      first = false;
    }
  }
  lengths.set(value, n);
  return n;
}

/** What JSON leaves out of an object (and writes as null in an array). */
const omitted = (v: unknown): boolean => v === undefined || typeof v === 'function' || typeof v === 'symbol';
