/**
 * Polls every node's HTTP management endpoint (`GET /cluster`, `/singletons`, `/partitions`)
 * about every 300 ms and keeps the last answer of each. One request set per node at a time; a
 * node that does not answer (paused, crashed, starting) keeps its previous snapshot, marked by
 * its time, and an error. `/singletons` and `/partitions` may be missing (404) on older nodes.
 */

// The management endpoint's own view types: one declaration for the server and its readers.
import type {
  ClusterView,
  MemberView,
  PartitionsView,
  SingletonView,
} from '../../../packages/doyen/src/management-http.js';

export type { ClusterView, MemberView, PartitionsView, SingletonView };

/** What the demo reads of `GET /cluster/shards`: per entity type, entities per partition held here. */
export interface ShardsView {
  readonly regions: readonly {
    readonly typeName: string;
    readonly shards: readonly { readonly numEntities: number }[];
  }[];
}

/** Entities running on a node, all types, from its shards view. */
export function entitiesOf(shards: ShardsView | null | undefined): number | undefined {
  if (!shards || !Array.isArray(shards.regions)) return undefined;
  let n = 0;
  for (const r of shards.regions) for (const s of r.shards ?? []) n += s.numEntities ?? 0;
  return n;
}

export interface NodeSnapshot {
  /** When `cluster` was last read successfully (0: never). */
  readonly at: number;
  readonly cluster: ClusterView | undefined;
  /** `null`: the endpoint answered 404 (not there); `undefined`: no answer yet. */
  readonly singletons: readonly SingletonView[] | null | undefined;
  readonly partitions: PartitionsView | null | undefined;
  /** `GET /cluster/shards` (sharded entities here), same conventions. */
  readonly shards?: ShardsView | null | undefined;
  /** The last failure (connection refused, timeout), cleared by the next success. */
  readonly error: string | undefined;
  readonly errorAt: number;
}

export interface PollTarget {
  readonly name: string;
  readonly httpPort: number;
  /** Skip it this round (a paused node would only time out). */
  readonly skip?: boolean;
}

export interface PollerOptions {
  readonly host?: string;
  readonly intervalMs?: number;
  readonly timeoutMs?: number;
  readonly targets: () => readonly PollTarget[];
  readonly onUpdate?: (name: string, snapshot: NodeSnapshot) => void;
}

const EMPTY: NodeSnapshot = {
  at: 0,
  cluster: undefined,
  singletons: undefined,
  partitions: undefined,
  error: undefined,
  errorAt: 0,
};

async function getJson(url: string, timeoutMs: number): Promise<unknown> {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  if (res.status === 404) {
    await res.body?.cancel();
    return null;
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new Error(`HTTP ${res.status}`);
  }
  return res.json();
}

export class Poller {
  readonly snapshots = new Map<string, NodeSnapshot>();
  private readonly inFlight = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private readonly host: string;

  constructor(private readonly options: PollerOptions) {
    this.host = options.host ?? '127.0.0.1';
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.pollAll(), this.options.intervalMs ?? 300);
    this.pollAll();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  snapshot(name: string): NodeSnapshot {
    return this.snapshots.get(name) ?? EMPTY;
  }

  /** Forget a node's answers (it was restarted or removed). */
  forget(name: string): void {
    this.snapshots.delete(name);
  }

  /** Polls every target once now (also what the timer does); resolves when all answered. */
  async pollAll(): Promise<void> {
    await Promise.all(
      this.options
        .targets()
        .filter((t) => !t.skip)
        .map((t) => this.pollOne(t)),
    );
  }

  private async pollOne(target: PollTarget): Promise<void> {
    if (this.inFlight.has(target.name)) return;
    this.inFlight.add(target.name);
    const base = `http://${this.host}:${target.httpPort}`;
    const timeout = this.options.timeoutMs ?? 1000;
    const previous = this.snapshot(target.name);
    let next: NodeSnapshot;
    try {
      const [cluster, singletons, partitions, shards] = await Promise.all([
        getJson(`${base}/cluster`, timeout),
        getJson(`${base}/singletons`, timeout).catch(() => previous.singletons),
        getJson(`${base}/partitions`, timeout).catch(() => previous.partitions),
        getJson(`${base}/cluster/shards`, timeout).catch(() => previous.shards),
      ]);
      if (cluster === null) throw new Error('GET /cluster: 404');
      next = {
        at: Date.now(),
        cluster: cluster as ClusterView,
        singletons: singletons as NodeSnapshot['singletons'],
        partitions: partitions as NodeSnapshot['partitions'],
        shards: shards as NodeSnapshot['shards'],
        error: undefined,
        errorAt: 0,
      };
    } catch (error) {
      const e = error as Error & { cause?: { code?: string } };
      const reason = e.name === 'TimeoutError' ? 'timeout' : (e.cause?.code ?? e.message);
      next = { ...previous, error: reason, errorAt: Date.now() };
    } finally {
      this.inFlight.delete(target.name);
    }
    this.snapshots.set(target.name, next);
    this.options.onUpdate?.(target.name, next);
  }
}
