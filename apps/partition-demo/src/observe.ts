/**
 * What the polled answers say about the cluster, as a pure function: which coordinator most
 * nodes agree on (during a partition each side has its own), that majority's member list, where
 * the singletons run, the partition table and how balanced it is, and per node what it sees.
 */
import type { ProcState } from './cluster-processes.js';
import type { ClusterView, MemberView, NodeSnapshot, PartitionsView } from './poller.js';

export const ALLOCATOR = 'partition-allocator';

export interface ObservedNode {
  readonly name: string;
  readonly address: string;
  readonly state: ProcState;
  readonly snapshot: NodeSnapshot;
}

export interface Vote {
  readonly address: string;
  readonly name: string;
  /** How many answering nodes name it as their coordinator. */
  readonly votes: number;
}

export interface Balance {
  readonly version: number;
  readonly partitionCount: number;
  /** Members of the majority view that are up (the ones that should own partitions). */
  readonly members: number;
  readonly owners: number;
  readonly min: number;
  readonly max: number;
  readonly unassigned: number;
  /** Owners that are not up members of the majority view. */
  readonly strays: readonly string[];
  readonly balanced: boolean;
}

export interface NodeRow {
  /** This node as the majority view lists it (its current incarnation when listed twice). */
  readonly member: MemberView | undefined;
  /** Whether the node answered recently (not paused, crashed or still starting). */
  readonly fresh: boolean;
  readonly error: string | undefined;
  /** What the node says about itself and sees. */
  readonly selfStatus: string | undefined;
  readonly uid: string | undefined;
  readonly seesUp: number | undefined;
  readonly seesCoordinator: string | undefined;
  readonly isCoordinator: boolean;
  readonly partitions: number | undefined;
  readonly runsAllocator: boolean;
}

export interface Observation {
  /** Processes that are not exited. */
  readonly alive: number;
  readonly answering: number;
  /** The coordinator named by most answering nodes. */
  readonly coordinator: (Vote & { readonly majority: boolean }) | undefined;
  /** Other coordinators some nodes see (a partition, or a change in progress). */
  readonly others: readonly Vote[];
  readonly reference: ClusterView | undefined;
  readonly rows: ReadonlyMap<string, NodeRow>;
  /** Singleton name -> names of the nodes it runs on (should be exactly one). */
  readonly singletons: ReadonlyMap<string, readonly string[]>;
  readonly table: PartitionsView | undefined;
  readonly balance: Balance | undefined;
  /** Endpoints that answered 404 (not deployed on these nodes yet). */
  readonly missing: readonly string[];
}

const FRESH_MS = 2000;

export function isFresh(node: ObservedNode, now: number): boolean {
  const s = node.snapshot;
  if (node.state === 'exited' || node.state === 'paused') return false;
  return s.cluster !== undefined && s.at > now - FRESH_MS && s.errorAt <= s.at;
}

export function nameResolver(nodes: readonly ObservedNode[]): (address: string) => string {
  const byAddress = new Map(nodes.map((n) => [n.address, n.name]));
  return (address) => byAddress.get(address) ?? address;
}

const upMembers = (v: ClusterView) => v.members.filter((m) => m.status === 'up');

export function balanceOf(table: PartitionsView, view: ClusterView | undefined): Balance {
  const up = view ? upMembers(view).map((m) => m.address) : Object.keys(table.counts);
  const counts = up.map((a) => table.counts[a] ?? 0);
  const owners = Object.keys(table.counts).filter((a) => (table.counts[a] ?? 0) > 0);
  const unassigned = table.owners.filter((o) => o === '').length + table.partitionCount - table.owners.length;
  const strays = owners.filter((a) => !up.includes(a));
  const min = counts.length ? Math.min(...counts) : 0;
  const max = counts.length ? Math.max(...counts) : 0;
  return {
    version: table.version,
    partitionCount: table.partitionCount,
    members: up.length,
    owners: owners.length,
    min,
    max,
    unassigned,
    strays,
    balanced: up.length > 0 && unassigned === 0 && strays.length === 0 && max - min <= 1 && min > 0,
  };
}

export function observe(nodes: readonly ObservedNode[], now: number): Observation {
  const nameOf = nameResolver(nodes);
  const alive = nodes.filter((n) => n.state !== 'exited');
  const fresh = nodes.filter((n) => isFresh(n, now));
  const votes = new Map<string, ObservedNode[]>();
  for (const n of fresh) {
    const c = n.snapshot.cluster!.coordinator;
    if (!c || n.snapshot.cluster!.status === 'down') continue;
    votes.set(c, [...(votes.get(c) ?? []), n]);
  }
  // most votes first; ties go to the older coordinator as the voters see it
  const ageOf = (address: string, voters: ObservedNode[]) =>
    voters[0]!.snapshot.cluster!.members.find((m) => m.address === address && m.status !== 'down')?.age ??
    Number.MAX_SAFE_INTEGER;
  const ranked = [...votes.entries()].sort(
    ([a, va], [b, vb]) => vb.length - va.length || ageOf(a, va) - ageOf(b, vb) || a.localeCompare(b),
  );
  const [winner, ...rest] = ranked;
  const coordinator = winner && {
    address: winner[0],
    name: nameOf(winner[0]),
    votes: winner[1].length,
    majority: winner[1].length * 2 > alive.length,
  };
  const others = rest.map(([address, voters]) => ({ address, name: nameOf(address), votes: voters.length }));
  const group = winner?.[1] ?? [];
  const own = group.find((n) => n.address === winner?.[0]);
  const reference =
    own?.snapshot.cluster ??
    [...group].sort((a, b) => b.snapshot.cluster!.version - a.snapshot.cluster!.version)[0]?.snapshot.cluster;

  // the partition table: the coordinator's (the allocator publishes there first), else the newest
  const tables = group.map((n) => n.snapshot.partitions).filter((t): t is PartitionsView => !!t);
  const table =
    (own?.snapshot.partitions ?? undefined) || [...tables].sort((a, b) => b.version - a.version)[0];
  const raw = table ? balanceOf(table, reference) : undefined;
  const balance = raw && { ...raw, strays: raw.strays.map(nameOf) };

  const singletons = new Map<string, string[]>();
  for (const n of fresh) {
    for (const s of n.snapshot.singletons ?? []) {
      const on = singletons.get(s.name) ?? [];
      if (s.runsHere) on.push(n.name);
      singletons.set(s.name, on);
    }
  }
  const missing: string[] = [];
  if (fresh.length > 0 && fresh.every((n) => n.snapshot.singletons === null)) missing.push('/singletons');
  if (fresh.length > 0 && fresh.every((n) => n.snapshot.partitions === null)) missing.push('/partitions');

  const rows = new Map<string, NodeRow>();
  for (const n of nodes) {
    const view = n.snapshot.cluster;
    const isFreshNode = isFresh(n, now);
    const listed = (reference?.members ?? []).filter((m) => m.address === n.address);
    const member =
      listed.find((m) => m.uid === view?.uid) ?? listed.find((m) => m.status !== 'down') ?? listed[0];
    const runs = isFreshNode && (n.snapshot.singletons ?? []).some((s) => s.name === ALLOCATOR && s.runsHere);
    rows.set(n.name, {
      member,
      fresh: isFreshNode,
      error: n.state === 'exited' ? undefined : n.snapshot.error,
      selfStatus: view?.status,
      uid: view?.uid,
      seesUp: view ? upMembers(view).length : undefined,
      seesCoordinator: view?.coordinator ? nameOf(view.coordinator) : undefined,
      isCoordinator: coordinator?.address === n.address,
      partitions: table && member?.status === 'up' ? (table.counts[n.address] ?? 0) : undefined,
      runsAllocator: runs,
    });
  }
  return {
    alive: alive.length,
    answering: fresh.length,
    coordinator,
    others,
    reference,
    rows,
    singletons,
    table,
    balance,
    missing,
  };
}
