// A cluster of node processes (membership-node.ts) for the membership bench: kill -9 one of them and time how
// long the survivors take to notice and to take it out; or make one stall its event loop and count the false
// suspicions it causes. The first node is the seed and forms the cluster; a killed node is restarted at the
// same address as a new incarnation, joining through the survivors.

import { memberKey } from '../../packages/cluster/src/index.js';
import { freePorts } from './free-ports.js';
import type { NodeEvent, NodeState } from './membership-messages.js';
import { NodeProcess } from './membership-processes.js';
import { allUpAtOneVersion, startedOrClosed, startNodeProcesses } from './node-processes.js';
import { waitFor, withTimeout } from './timeout.js';

export type VictimKind = 'member' | 'coordinator';

export interface KillSample {
  readonly victim: VictimKind;
  readonly address: string;
  /** Kill to the first `member.unreachable` for the victim seen by any survivor. */
  readonly detectMs: number;
  /** Kill to the last survivor's `member.downed` for the victim: removal agreed by all. */
  readonly removeMs: number;
  /** Coordinator kills: kill to the last survivor's `coordinator.changed` to a live node. */
  readonly failoverMs: number | undefined;
  /** false when a survivor saw `member.downed` without a `member.unreachable` first (detection = downed). */
  readonly sawUnreachable: boolean;
  /** `member.unreachable` events about members other than the victim, in the survivors, during this run. */
  readonly otherUnreachable: number;
}

export interface StallOutcome {
  readonly stallingNode: string;
  readonly stalls: number;
  readonly maxTimerGapMs: number;
  /** Events the other nodes published about any member while (and shortly after) the node stalled. */
  readonly unreachable: number;
  readonly reachable: number;
  readonly downed: number;
  /** The same, published by the stalling node itself (about its peers). */
  readonly selfUnreachable: number;
  readonly selfDowned: number;
  readonly convergedAfter: boolean;
}

const CONVERGE_TIMEOUT_MS = 20_000;
const REMOVAL_TIMEOUT_MS = 15_000;

export class ProcessCluster {
  private constructor(
    private readonly nodes: NodeProcess[],
    private readonly nodeArgs: readonly string[],
  ) {}

  /**
   * Starts `n` node processes on free ports and waits until they agree on an all-up membership.
   * `downing` overrides the cluster's default downing mode.
   */
  static async start(n: number, downing?: string): Promise<ProcessCluster> {
    const nodes: NodeProcess[] = [];
    const nodeArgs = downing ? ['--downing', downing] : [];
    const spawn = (port: number, seeds: readonly string[]) => NodeProcess.spawn(port, seeds, nodeArgs);
    const cluster = new ProcessCluster(nodes, nodeArgs);
    return startedOrClosed(cluster, async () => {
      await startNodeProcesses(nodes, await freePorts(n), spawn);
      await cluster.converged();
    });
  }

  get size(): number {
    return this.nodes.length;
  }

  /** Waits until every node sees every current incarnation `up`, at one version, with none unreachable. */
  async converged(timeoutMs = CONVERGE_TIMEOUT_MS): Promise<NodeState> {
    let agreed: NodeState | undefined;
    await waitFor(
      async () => {
        const keys = new Set(this.nodes.map((n) => n.key));
        const states = await Promise.all(this.nodes.map((n) => n.state()));
        const ok = allUpAtOneVersion(states, keys);
        if (ok) agreed = states[0];
        return ok;
      },
      timeoutMs,
      'cluster convergence',
      50,
    );
    return agreed!;
  }

  /**
   * Kills one node with SIGKILL (the coordinator, or the `k`-th non-coordinator), waits until every survivor
   * has downed it (and, for the coordinator, moved to a new one), then restarts it and waits for convergence.
   */
  async killAndRestart(kind: VictimKind, k: number): Promise<KillSample> {
    const before = await this.converged();
    const slots = this.nodes.map((_, i) => i);
    const others = slots.filter((i) => this.nodes[i]!.address !== before.coordinator);
    const slot =
      kind === 'coordinator'
        ? slots.find((i) => this.nodes[i]!.address === before.coordinator)
        : others[k % others.length];
    if (slot === undefined) throw new Error(`no ${kind} to kill (coordinator ${before.coordinator})`);
    const victim = this.nodes[slot]!;
    const victimKey = victim.key;
    const survivors = this.nodes.filter((n) => n !== victim);
    const marks = new Map(survivors.map((n) => [n, n.events.length]));
    const since = (n: NodeProcess): NodeEvent[] => n.events.slice(marks.get(n));
    const about = (e: NodeEvent, type: string) => e.type === type && memberKey(e) === victimKey;
    const newCoordinator = (e: NodeEvent) =>
      e.type === 'coordinator.changed' && e.address !== '' && memberKey(e) !== victimKey;

    const tKill = victim.kill9();
    await waitFor(
      () =>
        survivors.every(
          (n) =>
            since(n).some((e) => about(e, 'member.downed')) &&
            (kind === 'member' || since(n).some(newCoordinator)),
        ),
      REMOVAL_TIMEOUT_MS,
      `removal of killed ${kind} ${victim.address}`,
    );
    const first = (n: NodeProcess, match: (e: NodeEvent) => boolean) => since(n).find(match)?.t;
    const downed = survivors.map((n) => first(n, (e) => about(e, 'member.downed'))!);
    const unreachable = survivors.map((n) => first(n, (e) => about(e, 'member.unreachable')));
    const sawUnreachable = unreachable.some((t) => t !== undefined);
    const detectAt = Math.min(...unreachable.map((t, i) => t ?? downed[i]!));
    const sample: KillSample = {
      victim: kind,
      address: victim.address,
      detectMs: detectAt - tKill,
      removeMs: Math.max(...downed) - tKill,
      failoverMs:
        kind === 'coordinator'
          ? Math.max(...survivors.map((n) => first(n, newCoordinator)!)) - tKill
          : undefined,
      sawUnreachable,
      otherUnreachable: survivors
        .flatMap(since)
        .filter((e) => e.type === 'member.unreachable' && memberKey(e) !== victimKey).length,
    };

    await withTimeout(victim.exited, 5_000, `exit of killed node ${victim.address}`);
    // Seeds: the survivors, the coordinator first, so the restarted node joins rather than forms.
    const after = await survivors[0]!.state();
    const seeds = survivors
      .map((n) => n.address)
      .sort((a, b) => +(b === after.coordinator) - +(a === after.coordinator));
    this.nodes[slot] = NodeProcess.spawn(victim.port, seeds, this.nodeArgs);
    await this.nodes[slot]!.whenUp();
    await this.converged();
    return sample;
  }

  /**
   * Makes the youngest non-coordinator block its event loop for `busyMs` every `everyMs`, for `forMs`, and
   * counts the reachability events all nodes publish meanwhile and `graceMs` after.
   */
  async stall(busyMs: number, everyMs: number, forMs: number, graceMs = 2_000): Promise<StallOutcome> {
    const before = await this.converged();
    const youngest = [...before.members]
      .filter((m) => m.address !== before.coordinator)
      .sort((a, b) => b.age - a.age)[0];
    const staller = this.nodes.find((n) => n.address === youngest?.address);
    if (!staller) throw new Error('no non-coordinator node to stall');
    const marks = new Map(this.nodes.map((n) => [n, n.events.length]));
    staller.stallDone = undefined;
    staller.send({ cmd: 'stall', busyMs, everyMs, forMs });
    await waitFor(() => staller.stallDone !== undefined, forMs + 15_000, 'stalling node', 50);
    await new Promise((r) => setTimeout(r, graceMs));
    const count = (nodes: NodeProcess[], type: string) =>
      nodes.flatMap((n) => n.events.slice(marks.get(n))).filter((e) => e.type === type).length;
    const others = this.nodes.filter((n) => n !== staller);
    let convergedAfter = true;
    try {
      await this.converged(5_000);
    } catch {
      convergedAfter = false;
    }
    return {
      stallingNode: staller.address,
      stalls: staller.stallDone!.stalls,
      maxTimerGapMs: staller.stallDone!.maxTimerGapMs,
      unreachable: count(others, 'member.unreachable'),
      reachable: count(others, 'member.reachable'),
      downed: count(others, 'member.downed'),
      selfUnreachable: count([staller], 'member.unreachable'),
      selfDowned: count([staller], 'member.downed'),
      convergedAfter,
    };
  }

  /** Stops every node process (SIGTERM, then SIGKILL), in parallel. */
  async close(): Promise<void> {
    await Promise.allSettled(this.nodes.map((n) => n.stop()));
  }
}
