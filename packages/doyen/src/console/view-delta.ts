import type { ConsoleMemberRow, MachineView, NodeView, PartitionGridView } from './node-view.js';

/**
 * A view's change from one version to the next, so that a kill at 50 nodes moves 49 small
 * changes (a reachability record, a member's status) instead of 49 whole views (every member
 * row and the partition table in each). Members and machines go as the items that changed (and
 * the order when it changed), partitions as the cells that changed, every other field whole when
 * it changed. Applied only on the version it was made from (`base`): a receiver holding another
 * version asks for a full view instead.
 */

/** The fields a delta replaces whole when they changed. */
export const WHOLE_FIELDS = [
  'name',
  'roles',
  'incarnation',
  'upSince',
  'membershipVersion',
  'coordinator',
  'successor',
  'unreachable',
  'reachability',
  'sbr',
  'singletons',
  'election',
  'entities',
] as const;

/** Of those, the ones a view may lack (a delta says when one went). */
export const OPTIONAL_FIELDS = [
  'name',
  'upSince',
  'coordinator',
  'successor',
  'election',
  'entities',
  'partitions',
] as const;

type WholeField = (typeof WHOLE_FIELDS)[number];
export type OptionalField = (typeof OPTIONAL_FIELDS)[number];
type DeltaView = Omit<NodeView, 'stale' | 'rev'>;

/** A list keyed by one field (members by key, machines by id): the items new or changed, and the order when it changed. */
export interface KeyedDelta<T> {
  /** Items new or changed. */
  readonly put: readonly T[];
  /** Every item's key in order, when the keys or their order changed (an item not in `put` is kept). */
  readonly keys?: readonly string[];
}

export type MembersDelta = KeyedDelta<ConsoleMemberRow>;
export type MachinesDelta = KeyedDelta<MachineView>;

export interface PartitionsDelta {
  readonly version: number;
  readonly length: number;
  /** `[partition, owner]` for each owner that changed. */
  readonly owners: readonly (readonly [number, string])[];
  readonly backups: readonly (readonly [number, readonly string[]])[];
  readonly moving?: readonly number[];
}

export interface ViewDelta {
  /** The version this applies to, and the one it makes. */
  readonly base: number;
  readonly version: number;
  readonly at: number;
  readonly set?: Partial<Pick<DeltaView, WholeField>>;
  readonly unset?: readonly OptionalField[];
  readonly members?: MembersDelta;
  readonly machines?: MachinesDelta;
  readonly partitions?: PartitionsDelta;
}

const same = (a: unknown, b: unknown): boolean => a === b || JSON.stringify(a) === JSON.stringify(b);

/** What changed from `prev` to `next` (undefined: nothing but the time it was made). */
export function diffView(prev: DeltaView, next: DeltaView, base: number): ViewDelta | undefined {
  const set: Record<string, unknown> = {};
  const unset: OptionalField[] = [];
  for (const f of WHOLE_FIELDS) {
    const value = next[f];
    if (value === undefined) {
      if (prev[f] !== undefined) unset.push(f as OptionalField);
    } else if (!same(prev[f], value)) set[f] = value;
  }
  const members = diffKeyed(prev.members, next.members, memberKey);
  const machines = diffKeyed(prev.machines, next.machines, machineId);
  let partitions: PartitionsDelta | undefined;
  if (next.partitions === undefined) {
    if (prev.partitions !== undefined) unset.push('partitions');
  } else partitions = diffPartitions(prev.partitions, next.partitions);
  const changed = Object.keys(set).length > 0 || unset.length > 0 || members || machines || partitions;
  if (!changed) return undefined;
  return {
    base,
    version: base + 1,
    at: next.at,
    ...(Object.keys(set).length > 0 ? { set: set as ViewDelta['set'] } : {}),
    ...(unset.length > 0 ? { unset } : {}),
    ...(members ? { members } : {}),
    ...(machines ? { machines } : {}),
    ...(partitions ? { partitions } : {}),
  };
}

const memberKey = (r: ConsoleMemberRow) => r.key;
const machineId = (m: MachineView) => m.id;

function diffKeyed<T>(
  prev: readonly T[],
  next: readonly T[],
  keyOf: (x: T) => string,
): KeyedDelta<T> | undefined {
  const before = new Map(prev.map((x) => [keyOf(x), x]));
  const put = next.filter((x) => !same(before.get(keyOf(x)), x));
  const reordered =
    prev.length !== next.length || next.some((x, i) => prev[i] === undefined || keyOf(prev[i]!) !== keyOf(x));
  if (put.length === 0 && !reordered) return undefined;
  return { put, ...(reordered ? { keys: next.map(keyOf) } : {}) };
}

/** `list` with `delta` applied, or undefined when it names an item the list lacks or passes `max`. */
function applyKeyed<T>(
  list: readonly T[],
  delta: KeyedDelta<T>,
  keyOf: (x: T) => string,
  max: number,
): T[] | undefined {
  const items = new Map(list.map((x) => [keyOf(x), x]));
  for (const x of delta.put) items.set(keyOf(x), x);
  const keys = delta.keys ?? list.map(keyOf);
  if (keys.length > max) return undefined;
  const out: T[] = [];
  for (const k of keys) {
    const x = items.get(k);
    if (x === undefined) return undefined;
    out.push(x);
  }
  // a changed item must be one the list holds
  const kept = new Set(keys);
  if (delta.put.some((x) => !kept.has(keyOf(x)))) return undefined;
  return out;
}

function diffPartitions(
  prev: PartitionGridView | undefined,
  next: PartitionGridView,
): PartitionsDelta | undefined {
  const owners: [number, string][] = [];
  const backups: [number, readonly string[]][] = [];
  next.owners.forEach((o, i) => {
    if (prev?.owners[i] !== o) owners.push([i, o]);
  });
  next.backups.forEach((b, i) => {
    if (!same(prev?.backups[i], b)) backups.push([i, b]);
  });
  const sameMoving = same(prev?.moving, next.moving);
  const sameShape =
    prev !== undefined && prev.version === next.version && prev.owners.length === next.owners.length;
  if (sameShape && owners.length === 0 && backups.length === 0 && sameMoving) return undefined;
  return {
    version: next.version,
    length: next.owners.length,
    owners,
    backups,
    ...(next.moving ? { moving: next.moving } : {}),
  };
}

/** Why a delta could not be applied (the receiver asks for a full view). */
export type DeltaMismatch = 'version' | 'members' | 'machines' | 'partitions';

/**
 * `view` with `delta` applied, or why not: a delta made from another version, or one naming a
 * member row or partition the view lacks. `limits` bounds what the result may hold (the caps a
 * full view is read with), so a stream of deltas cannot grow a view past them.
 */
export function applyDelta<V extends DeltaView>(
  view: V,
  version: number,
  delta: ViewDelta,
  limits: { readonly members: number; readonly machines: number; readonly partitions: number } = {
    members: 1024,
    machines: 32,
    partitions: 8192,
  },
): { view: V } | { mismatch: DeltaMismatch } {
  if (delta.base !== version) return { mismatch: 'version' };
  const out: Record<string, unknown> = { ...view, ...delta.set, at: delta.at };
  for (const f of delta.unset ?? []) delete out[f];
  if (delta.members) {
    const members = applyKeyed(view.members, delta.members, memberKey, limits.members);
    if (!members) return { mismatch: 'members' };
    out.members = members;
  }
  if (delta.machines) {
    const machines = applyKeyed(view.machines, delta.machines, machineId, limits.machines);
    if (!machines) return { mismatch: 'machines' };
    out.machines = machines;
  }
  if (delta.partitions) {
    const p = delta.partitions;
    if (p.length > limits.partitions) return { mismatch: 'partitions' };
    const prev = view.partitions;
    const owners = Array.from({ length: p.length }, (_, i) => prev?.owners[i] ?? '');
    const backups = Array.from({ length: p.length }, (_, i) => prev?.backups[i] ?? []);
    for (const [i, o] of p.owners) {
      if (i >= p.length) return { mismatch: 'partitions' };
      owners[i] = o;
    }
    for (const [i, b] of p.backups) {
      if (i >= p.length) return { mismatch: 'partitions' };
      backups[i] = b;
    }
    out.partitions = { version: p.version, owners, backups, ...(p.moving ? { moving: p.moving } : {}) };
  }
  return { view: out as V };
}
