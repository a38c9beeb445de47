import { Cluster, type ClusterConfig } from '../../packages/cluster/src/index.js';
import type { ActorSystem, NodeAddress } from '../../packages/core/src/index.js';
import { Simulation, type SimulationOptions } from '../../packages/testkit/src/index.js';

export const GREEK = [
  'athens',
  'byzantium',
  'cyrene',
  'delphi',
  'ephesus',
  'fayum',
  'gortyn',
  'halicarnassus',
] as const;

export interface SimNode {
  readonly name: string;
  readonly address: NodeAddress;
  system: ActorSystem;
  cluster: Cluster;
}

/** A simulated cluster of named nodes at 10.0.0.x:2552 on one virtual clock. */
export class SimCluster {
  readonly sim: Simulation;
  readonly nodes = new Map<string, SimNode>();

  /** Runs for every node incarnation right after its cluster starts (e.g. to register singletons). */
  onNodeStart: ((node: SimNode) => void) | undefined;

  /** Downed nodes restart as new incarnations that rejoin through the members they knew. */
  restartDowned = false;
  readonly downedAt: { name: string; time: number }[] = [];
  readonly rejoins: { name: string; time: number }[] = [];

  constructor(
    options: Partial<SimulationOptions> & { seed: number },
    private readonly config: Partial<ClusterConfig> = {},
  ) {
    this.sim = new Simulation(options);
  }

  /** Names beyond GREEK, in order of first start: each keeps its address across restarts. */
  private readonly extraNames: string[] = [];

  addressOf(name: string): NodeAddress {
    const index = GREEK.indexOf(name as (typeof GREEK)[number]);
    if (index >= 0) return { host: `10.0.0.${index + 1}`, port: 2552 };
    if (!this.extraNames.includes(name)) this.extraNames.push(name);
    return { host: `10.0.1.${this.extraNames.indexOf(name) + 1}`, port: 2552 };
  }

  /** Starts (or restarts, as a new incarnation) a node that joins through `seeds`. */
  start(name: string, seeds: string[] = ['athens'], config: Partial<ClusterConfig> = {}): SimNode {
    return this.startAt(
      name,
      seeds.map((s) => this.addressOf(s)),
      config,
    );
  }

  private startAt(name: string, seeds: readonly NodeAddress[], config: Partial<ClusterConfig>): SimNode {
    const address = this.addressOf(name);
    const system = this.sim.addSystem({ cluster: 'sim', host: address.host, port: address.port });
    const cluster = Cluster.start(
      system,
      { ...this.config, ...config, name, seeds },
      {
        onDowned: (known) => {
          this.downedAt.push({ name, time: this.sim.now });
          if (!this.restartDowned || known.length === 0) return;
          // like a supervisor restarting the process: a moment later, as a new incarnation
          this.sim.clock.setTimeout(() => {
            if (this.nodes.get(name)?.system !== system) return;
            this.crash(name);
            // it carries the members it knew (as start-node does), unless the test set its own
            const last = this.config.lastMembers === undefined ? { lastMembers: known } : {};
            this.startAt(name, known, { ...config, ...last, mayFormCluster: false });
          }, 10);
        },
        onRejoin: (seeds) => {
          this.rejoins.push({ name, time: this.sim.now });
          this.sim.clock.setTimeout(() => {
            if (this.nodes.get(name)?.system !== system) return;
            this.crash(name);
            this.startAt(name, seeds, { ...config, mayFormCluster: false });
          }, 10);
        },
      },
    );
    const node = { name, address, system, cluster };
    this.nodes.set(name, node);
    this.onNodeStart?.(node);
    return node;
  }

  get(name: string): SimNode {
    const n = this.nodes.get(name);
    if (!n) throw new Error(`no node ${name}`);
    return n;
  }

  /** Cuts every link between the nodes named in `a` and those named in `b` (both ways). */
  split(a: readonly string[], b: readonly string[]): void {
    this.sim.partition(
      a.map((n) => this.get(n).system),
      b.map((n) => this.get(n).system),
    );
  }

  /** Drops every message from the nodes named in `from` to those named in `to`; the other direction still works. */
  cutOneWay(from: readonly string[], to: readonly string[]): void {
    for (const f of from) for (const t of to) this.sim.blockOneWay(this.get(f).system, this.get(t).system);
  }

  crash(name: string): void {
    this.get(name).cluster.stop();
    this.sim.crash(this.get(name).system);
    this.nodes.delete(name);
  }

  /** Names of up members as `name` sees them, sorted. */
  upMembers(name: string): string[] {
    return (this.get(name).cluster.state().membership?.members ?? [])
      .filter((m) => m.status === 'up')
      .map((m) => m.name)
      .sort();
  }

  coordinatorOf(name: string): string | undefined {
    return this.get(name).cluster.state().coordinator?.name;
  }

  /** True when every listed node sees exactly `members` up and the same coordinator and version. */
  converged(names: string[], members: string[] = names): boolean {
    const want = [...members].sort().join(',');
    const views = names.map((n) => {
      const s = this.get(n).cluster.state();
      return `${s.coordinator?.name}|${s.membership?.version}|${this.upMembers(n).join(',')}`;
    });
    return views.every((v) => v === views[0] && v.endsWith(`|${want}`));
  }
}

/**
 * A cluster of `names` started one by one (each joining through athens, 200 ms apart, so ages
 * follow the order) and run until all of them agree on one membership.
 */
export async function formedSimCluster(
  names: string[],
  options: Partial<SimulationOptions> & { seed: number },
  config: Partial<ClusterConfig> = {},
): Promise<SimCluster> {
  const c = new SimCluster(options, config);
  for (const n of names) {
    c.start(n);
    await c.sim.runFor(200);
  }
  await c.sim.runUntil(() => c.converged(names), { description: 'initial convergence' });
  return c;
}
