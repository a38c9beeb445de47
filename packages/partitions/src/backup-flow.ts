/**
 * Exact solver for backup placement: a min-cost flow on an implicit graph, by the primal-dual
 * method (Dijkstra over reduced costs for potentials, then Dinic's blocking flows along
 * zero-reduced-cost arcs; repeat until the sink is unreachable).
 *
 *   source → partition p            capacity b
 *   partition p → member m          capacity 1, cost 0 if m was a backup of p, else 1;
 *                                   no arc to p's owner
 *   member m → sink                 capacity ⌊B/N⌋       (B = P·b backup slots)
 *   member m → extra → sink         capacity 1 per member, B mod N in total
 *
 * A full flow gives every member ⌊B/N⌋ or one more and every partition b distinct backups; the
 * minimum cost is the fewest new backup assignments, and which members take the extra slots is
 * part of what gets optimised. Arcs are never materialised (P·N of them may be large): they are
 * derived from the current assignment. Work is O(phases × P × N) with few phases (one per path
 * cost level, usually 2 or 3).
 */
export interface BackupProblem {
  /** Owner's member index per partition. */
  readonly owners: readonly number[];
  readonly memberCount: number;
  /** Backups per partition; at most memberCount - 1. */
  readonly b: number;
  /** Previous backups (member indices) per partition, still valid: eligible, not the owner. */
  readonly previous: readonly (readonly number[])[];
}

const SOURCE = 0;
const SINK = 1;
const EXTRA = 2;
const UNSEEN = -1;

/** Member indices per partition: previous backups first, in their old order. */
export function solveBackups(problem: BackupProblem): number[][] {
  const flow = new BackupFlow(problem);
  flow.run();
  if (flow.total !== problem.owners.length * problem.b) {
    throw new Error('partition backups: no balanced assignment exists (quota invariant broken)');
  }
  return flow.rows.map((row, p) => {
    const previous = problem.previous[p]!;
    return [...previous.filter((m) => row.includes(m)), ...row.filter((m) => !previous.includes(m))];
  });
}

class BackupFlow {
  readonly rows: number[][];
  total = 0;
  private readonly P: number;
  private readonly N: number;
  private readonly floor: number;
  private readonly extras: number;
  private readonly backedUp: Set<number>[]; // member -> partitions it backs up
  private readonly base: Int32Array; // flow member -> sink
  private readonly extra: Uint8Array; // flow member -> extra
  private extraUsed = 0; // flow extra -> sink
  private readonly potential: Float64Array;
  private readonly rank: number[]; // p's position among its owner's partitions
  private readonly order: number[]; // partitions in the order the source offers them
  private level = new Int32Array(0);
  private cursor = new Int32Array(0);
  private snapshot: number[][] = [];

  constructor(private readonly problem: BackupProblem) {
    this.P = problem.owners.length;
    this.N = problem.memberCount;
    const slots = this.P * problem.b;
    this.floor = Math.floor(slots / this.N);
    this.extras = slots % this.N;
    this.rows = Array.from({ length: this.P }, () => []);
    this.backedUp = Array.from({ length: this.N }, () => new Set());
    this.base = new Int32Array(this.N);
    this.extra = new Uint8Array(this.N);
    this.potential = new Float64Array(3 + this.P + this.N);
    // Partitions are offered one per owner in turn (each owner's first, then each one's second,
    // ...), so members' capacity runs out evenly across owners rather than on the last owners.
    const seen = new Int32Array(this.N);
    this.rank = problem.owners.map((owner) => seen[owner]!++);
    this.order = Array.from({ length: this.P }, (_, p) => p).sort(
      (a, b) => this.rank[a]! - this.rank[b]! || problem.owners[a]! - problem.owners[b]!,
    );
  }

  run(): void {
    while (this.updatePotentials()) {
      while (this.buildLevels()) {
        while (this.push(SOURCE)) this.total++;
      }
    }
  }

  // Node numbering: source, sink, extra, then partitions, then members.
  private partition(p: number): number {
    return 3 + p;
  }
  private member(m: number): number {
    return 3 + this.P + m;
  }

  private cost(p: number, m: number): number {
    return this.problem.previous[p]!.includes(m) ? 0 : 1;
  }

  /**
   * Calls `visit(v, cost)` for each residual arc out of `u` (never out of the sink: paths end
   * there); stops early when `visit` returns true. Arcs out of a member back to partitions come
   * from `reverse` so that Dinic's cursor sees a stable list during a round.
   */
  private arcs(
    u: number,
    from: number,
    visit: (v: number, cost: number) => boolean,
    reverse?: number[][],
  ): number {
    const { P, N } = this;
    if (u === SOURCE) {
      for (let i = from; i < P; i++) {
        const p = this.order[i]!;
        if (this.rows[p]!.length < this.problem.b && visit(this.partition(p), 0)) return i;
      }
      return P;
    }
    if (u === EXTRA) {
      if (from === 0 && this.extraUsed < this.extras && visit(SINK, 0)) return 0;
      for (let m = Math.max(from - 1, 0); m < N; m++)
        if (this.extra[m] === 1 && visit(this.member(m), 0)) return m + 1;
      return N + 1;
    }
    if (u < 3 + P) {
      const p = u - 3;
      const owner = this.problem.owners[p]!;
      const row = this.rows[p]!;
      // Arc i leads to the i-th member after the owner, rotated by p's rank, so the backups of
      // one owner's partitions go round all other members instead of piling onto the first
      // with room: when that owner fails, promotions and load spread too.
      for (let i = from; i < N - 1; i++) {
        const m = (owner + 1 + ((this.rank[p]! + i) % (N - 1))) % N;
        if (!row.includes(m) && visit(this.member(m), this.cost(p, m))) return i;
      }
      return N - 1;
    }
    const m = u - 3 - P;
    if (from === 0 && this.base[m]! < this.floor && visit(SINK, 0)) return 0;
    if (from <= 1 && this.extra[m] === 0 && visit(EXTRA, 0)) return 1;
    const back = reverse?.[m] ?? [...this.backedUp[m]!];
    for (let i = Math.max(from - 2, 0); i < back.length; i++) {
      const p = back[i]!;
      if (this.backedUp[m]!.has(p) && visit(this.partition(p), -this.cost(p, m))) return i + 2;
    }
    return back.length + 2;
  }

  private reduced(u: number, v: number, cost: number): number {
    return cost + this.potential[u]! - this.potential[v]!;
  }

  /** Dijkstra with buckets (reduced costs are small non-negative integers); false if no path. */
  private updatePotentials(): boolean {
    const size = this.potential.length;
    const dist = new Float64Array(size).fill(Infinity);
    const done = new Uint8Array(size);
    const buckets: number[][] = [[SOURCE]];
    dist[SOURCE] = 0;
    let reached = Infinity;
    for (let d = 0; d < buckets.length && reached === Infinity; d++) {
      for (const u of buckets[d] ?? []) {
        if (done[u] || dist[u] !== d) continue;
        done[u] = 1;
        if (u === SINK) {
          reached = d;
          break;
        }
        this.arcs(u, 0, (v, cost) => {
          const nd = d + this.reduced(u, v, cost);
          if (nd < dist[v]!) {
            dist[v] = nd;
            (buckets[nd] ??= []).push(v);
          }
          return false;
        });
      }
    }
    if (reached === Infinity) return false;
    for (let v = 0; v < size; v++) this.potential[v]! += Math.min(dist[v]!, reached);
    return true;
  }

  /** BFS levels over zero-reduced-cost residual arcs; false when the sink is not reached. */
  private buildLevels(): boolean {
    const size = this.potential.length;
    this.level = new Int32Array(size).fill(UNSEEN);
    this.cursor = new Int32Array(size);
    this.snapshot = Array.from(this.backedUp, (set) => [...set]);
    this.level[SOURCE] = 0;
    const queue = [SOURCE];
    for (let i = 0; i < queue.length && this.level[SINK] === UNSEEN; i++) {
      const u = queue[i]!;
      this.arcs(
        u,
        0,
        (v, cost) => {
          if (this.level[v] === UNSEEN && this.reduced(u, v, cost) === 0) {
            this.level[v] = this.level[u]! + 1;
            queue.push(v);
          }
          return false;
        },
        this.snapshot,
      );
    }
    return this.level[SINK] !== UNSEEN;
  }

  /** One unit along the level graph from `u` (depth-first, with Dinic's per-node cursor). */
  private push(u: number): boolean {
    if (u === SINK) return true;
    for (;;) {
      let next = -1;
      const at = this.arcs(
        u,
        this.cursor[u]!,
        (v, cost) => {
          if (this.level[v] !== this.level[u]! + 1 || this.reduced(u, v, cost) !== 0) return false;
          next = v;
          return true;
        },
        this.snapshot,
      );
      if (next === -1) {
        this.level[u] = UNSEEN; // dead end for the rest of this round
        return false;
      }
      this.cursor[u] = at;
      if (this.push(next)) {
        this.apply(u, next);
        return true;
      }
      this.cursor[u] = at + 1;
    }
  }

  /** Moves one unit of flow along the residual arc u -> v. */
  private apply(u: number, v: number): void {
    const firstMember = 3 + this.P;
    if (u === SOURCE) return; // source -> partition: the row's length is its flow
    if (u === EXTRA) {
      if (v === SINK) this.extraUsed++;
      else this.extra[v - firstMember] = 0;
      return;
    }
    if (u < firstMember) {
      const p = u - 3;
      const m = v - firstMember;
      this.rows[p]!.push(m);
      this.backedUp[m]!.add(p);
      return;
    }
    const m = u - firstMember;
    if (v === SINK) this.base[m]!++;
    else if (v === EXTRA) this.extra[m] = 1;
    else {
      const p = v - 3;
      this.rows[p]!.splice(this.rows[p]!.indexOf(m), 1);
      this.backedUp[m]!.delete(p);
    }
  }
}
