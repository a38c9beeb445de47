/**
 * The answers of a pure function for the last few keys, by identity. The machine's guards and
 * its action ask the same questions of the same immutable contexts several times per event (and
 * the next event asks again of this one's result). Bounded, so nothing old is kept alive: a
 * cache keyed by events once held 175 MB in a simulation of 100 nodes.
 */
export class Recent<K, V> {
  private readonly entries: { readonly key: K; readonly value: V }[] = [];
  constructor(
    private readonly size: number,
    private readonly same: (a: K, b: K) => boolean,
  ) {}

  get(key: K, compute: (key: K) => V): V {
    const hit = this.entries.find((e) => this.same(e.key, key));
    if (hit) return hit.value;
    const value = compute(key);
    this.entries.unshift({ key, value });
    if (this.entries.length > this.size) this.entries.pop();
    return value;
  }
}
