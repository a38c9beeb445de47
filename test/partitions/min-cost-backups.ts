import type { PartitionTable } from '../../packages/partitions/src/index.js';

/**
 * Test oracle: the fewest new backup assignments any balanced backup layout needs, given the new
 * owners, found by an exact min-cost flow (successive shortest paths, Bellman–Ford). Slow but
 * independent of the library's heuristics. Network: source → partition (b), partition → member
 * (1; cost 0 if it was a backup before, else 1; no edge to the owner), member → sink (⌊B/N⌋),
 * member → extra (1) → sink (B mod N), so exactly B mod N members get one more.
 */
export function optimalBackupMoves(
  before: PartitionTable | undefined,
  owners: readonly string[],
  keys: readonly string[],
  backupCount: number,
): number {
  const P = owners.length;
  const N = keys.length;
  const b = Math.min(backupCount, N - 1);
  if (b <= 0) return 0;
  const total = P * b;
  const source = 0;
  const sink = 1;
  const extra = 2;
  const partitionNode = (p: number) => 3 + p;
  const memberNode = (i: number) => 3 + P + i;
  const graph = new Graph(3 + P + N);
  for (let p = 0; p < P; p++) {
    graph.add(source, partitionNode(p), b, 0);
    keys.forEach((key, i) => {
      if (key !== owners[p])
        graph.add(partitionNode(p), memberNode(i), 1, before?.backups[p]?.includes(key) ? 0 : 1);
    });
  }
  keys.forEach((_, i) => {
    graph.add(memberNode(i), sink, Math.floor(total / N), 0);
    graph.add(memberNode(i), extra, 1, 0);
  });
  graph.add(extra, sink, total % N, 0);
  const { flow, cost } = graph.minCostFlow(source, sink);
  if (flow !== total) throw new Error(`no complete backup layout: ${flow} of ${total}`);
  return cost;
}

class Graph {
  private readonly to: number[] = [];
  private readonly cap: number[] = [];
  private readonly cost: number[] = [];
  private readonly adj: number[][];
  constructor(readonly size: number) {
    this.adj = Array.from({ length: size }, () => []);
  }
  add(from: number, to: number, cap: number, cost: number): void {
    for (const [a, b, c, w] of [
      [from, to, cap, cost],
      [to, from, 0, -cost],
    ] as const) {
      this.adj[a]!.push(this.to.length);
      this.to.push(b);
      this.cap.push(c);
      this.cost.push(w);
    }
  }
  minCostFlow(s: number, t: number): { flow: number; cost: number } {
    let flow = 0;
    let cost = 0;
    for (;;) {
      // Bellman–Ford with a queue (SPFA): residual costs may be negative.
      const dist = new Array<number>(this.size).fill(Infinity);
      const via = new Array<number>(this.size).fill(-1);
      const queued = new Array<boolean>(this.size).fill(false);
      dist[s] = 0;
      const queue = [s];
      queued[s] = true;
      for (let head = 0; head < queue.length; head++) {
        const u = queue[head]!;
        queued[u] = false;
        for (const e of this.adj[u]!) {
          const v = this.to[e]!;
          if (this.cap[e]! > 0 && dist[u]! + this.cost[e]! < dist[v]!) {
            dist[v] = dist[u]! + this.cost[e]!;
            via[v] = e;
            if (!queued[v]) {
              queued[v] = true;
              queue.push(v);
            }
          }
        }
      }
      if (dist[t] === Infinity) return { flow, cost };
      let push = Infinity;
      for (let v = t; v !== s; v = this.to[via[v]! ^ 1]!) push = Math.min(push, this.cap[via[v]!]!);
      for (let v = t; v !== s; v = this.to[via[v]! ^ 1]!) {
        this.cap[via[v]!]! -= push;
        this.cap[via[v]! ^ 1]! += push;
      }
      flow += push;
      cost += push * dist[t]!;
    }
  }
}
