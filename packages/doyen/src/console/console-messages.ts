import { FieldError, type MessageTypes, type Read, read, schema } from '@doyen/core';
import type {
  ConsoleMemberRow,
  MachineTransition,
  MachineView,
  NodeView,
  PartitionGridView,
  ReachabilityRecord,
  SbrDecisionView,
  SbrStateView,
  SingletonRow,
} from './node-view.js';
import {
  type MachinesDelta,
  type MembersDelta,
  OPTIONAL_FIELDS,
  type PartitionsDelta,
  type ViewDelta,
} from './view-delta.js';

/**
 * The console's wire messages. A serving node (one a browser has the console open on) asks
 * every member to send it their view and logged events for a while; each member answers with
 * updates until the lease lapses or the subscriber leaves the membership. Both speak only for
 * the member that sends them: an update's view must be about its sender, so no member can paint
 * another's state. Everything is rebuilt from validated fields, with every list and string capped.
 */

/** Where every node's console actor runs. */
export const CONSOLE_PATH = '/system/console';
export const CONSOLE_ACTOR_NAME = 'console';

/** Caps on what one update may carry (a bigger one is refused at the boundary as invalid). */
export const CONSOLE_CAPS = {
  members: 1024,
  reachability: 4096,
  roles: 32,
  singletons: 128,
  machines: 32,
  transitions: 10,
  partitions: 8192,
  backupsPerPartition: 8,
  entityTypes: 128,
  eventsPerUpdate: 256,
  /** Plain data (a machine's state, an event's fields): nodes and depth. */
  dataNodes: 128,
  dataDepth: 6,
  text: 512,
  name: 256,
} as const;

/** Serving node -> member: send me your view and events for `leaseMs` (renewed before it lapses). */
export interface ConsoleSubscribe {
  readonly type: 'console.subscribe';
  readonly from: string;
  readonly leaseMs: number;
  /** Send the whole view next (the subscriber lost track of its versions). */
  readonly full?: boolean;
}

/** A logged event as a member sends it (the serving node adds `seq` and binds `node` to the sender). */
export interface WireEvent {
  readonly at: number;
  readonly event: string;
  readonly msg?: string;
  readonly fields: Readonly<Record<string, unknown>>;
}

/** The view as a member sends it (`stale` is the serving node's to say). */
export type WireView = Omit<NodeView, 'stale' | 'rev'>;

/**
 * Member -> subscriber: my view when it changed — whole (`view`, with its `version`) to a new
 * subscriber, else only the change (`delta`, from the version the subscriber holds) — and the
 * events logged since the last update.
 */
export interface ConsoleUpdate {
  readonly type: 'console.update';
  readonly from: string;
  readonly view?: WireView;
  readonly version?: number;
  readonly delta?: ViewDelta;
  readonly events: readonly WireEvent[];
}

export type ConsoleMessage = ConsoleSubscribe | ConsoleUpdate;

const C = CONSOLE_CAPS;
const text = read.string(C.text);
const name = read.string(C.name);
const key = read.memberKey;
const keyOrEmpty: Read<string> = (v, path) => (v === '' ? '' : key(v, path));
const roles = read.list(name, C.roles);

/** JSON-shaped data only (no refs, no bytes), bounded in nodes, depth and string length. */
export function readJsonData(maxNodes: number = C.dataNodes, maxDepth: number = C.dataDepth): Read<unknown> {
  return (v, path) => copyJson(v, path, maxDepth, { nodes: maxNodes });
}

function copyJson(v: unknown, path: string, depth: number, budget: { nodes: number }): unknown {
  if (--budget.nodes < 0) throw new FieldError(path, 'too large');
  if (v === null || typeof v === 'boolean') return v;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new FieldError(path, 'must be a finite number');
    return v;
  }
  if (typeof v === 'string') return v.length <= C.text ? v : `${v.slice(0, C.text)}…`;
  if (depth <= 0) throw new FieldError(path, 'nested too deeply');
  if (Array.isArray(v)) return v.map((x, i) => copyJson(x, `${path}[${i}]`, depth - 1, budget));
  if (typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      if (k === '__proto__' || k.length > C.name) continue;
      out[k] = copyJson(x, `${path}.${k}`, depth - 1, budget);
    }
    return out;
  }
  throw new FieldError(path, 'must be JSON data');
}

const data = readJsonData();
const eventName = read.matching(/^[A-Za-z0-9_.:-]{1,64}$/, 'an event name (area.fact)');
const nullableNumber: Read<number | null> = (v, path) => (v === null ? null : read.time(v, path));

const memberRow = read.object<ConsoleMemberRow>({
  key,
  address: read.address,
  status: name,
  roles,
  ageRank: read.count,
});

const reachabilityRecord = read.object<ReachabilityRecord>({
  observer: key,
  subject: key,
  status: read.oneOf('unreachable', 'terminated'),
});

const sbrDecision = read.object<SbrDecisionView>({
  at: read.time,
  decision: name,
  reason: read.optional(text),
  downed: read.list(key, C.members),
});

const sbr = read.object<SbrStateView>({
  strategy: name,
  state: read.optional(name),
  stableInMs: read.optional(nullableNumber),
  lastDecision: read.optional(sbrDecision),
});

const singleton = read.object<SingletonRow>({
  name,
  host: read.nullable(read.address),
  runsHere: read.boolean,
  state: data,
  handingOver: read.optional(read.boolean),
});

const partitions = read.object<PartitionGridView>({
  version: read.count,
  owners: read.list(keyOrEmpty, C.partitions),
  backups: read.list(read.list(key, C.backupsPerPartition), C.partitions),
  moving: read.optional(read.list(read.count, C.partitions)),
});

const transition = read.object<MachineTransition>({ at: read.time, event: name, state: data });

const machine = read.object<MachineView>({
  id: read.path,
  state: data,
  transitions: read.list(transition, C.transitions),
});

const entities: Read<Record<string, number>> = (v, path) => {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new FieldError(path, 'must be a map');
  const entries = Object.entries(v as Record<string, unknown>);
  if (entries.length > C.entityTypes) throw new FieldError(path, `at most ${C.entityTypes} entity types`);
  const out: Record<string, number> = {};
  for (const [k, n] of entries) {
    if (k === '__proto__') continue;
    out[name(k, `${path}.key`)] = read.count(n, `${path}.${k}`);
  }
  return out;
};

const election = read.object<NonNullable<WireView['election']>>({
  kind: name,
  term: read.optional(read.count),
  leader: read.optional(read.nullable(name)),
});

export const readWireView = read.object<WireView>({
  key,
  address: read.address,
  name: read.optional(name),
  roles,
  incarnation: read.count,
  upSince: read.optional(read.time),
  at: read.time,
  membershipVersion: read.count,
  members: read.list(memberRow, C.members),
  coordinator: read.optional(key),
  successor: read.optional(key),
  unreachable: read.list(key, C.members),
  reachability: read.list(reachabilityRecord, C.reachability),
  sbr,
  singletons: read.list(singleton, C.singletons),
  election: read.optional(election),
  partitions: read.optional(partitions),
  entities: read.optional(entities),
  machines: read.list(machine, C.machines),
});

/** `[index, value]` with the index a partition number. */
const cell =
  <T>(of: Read<T>): Read<readonly [number, T]> =>
  (v, path) => {
    if (!Array.isArray(v) || v.length !== 2) throw new FieldError(path, 'must be [partition, value]');
    const i = read.count(v[0], `${path}[0]`);
    if (i >= C.partitions) throw new FieldError(`${path}[0]`, `must be below ${C.partitions}`);
    return [i, of(v[1], `${path}[1]`)] as const;
  };

const partitionsDelta = read.object<PartitionsDelta>({
  version: read.count,
  length: (v, path) => {
    const n = read.count(v, path);
    if (n > C.partitions) throw new FieldError(path, `at most ${C.partitions} partitions`);
    return n;
  },
  owners: read.list(cell(keyOrEmpty), C.partitions),
  backups: read.list(cell(read.list(key, C.backupsPerPartition)), C.partitions),
  moving: read.optional(read.list(read.count, C.partitions)),
});

/** A view's change (view-delta.ts), read with the same caps as a whole view. */
export const readViewDelta = read.object<ViewDelta>({
  base: read.count,
  version: read.count,
  at: read.time,
  set: read.optional(
    read.object<NonNullable<ViewDelta['set']>>({
      name: read.optional(name),
      roles: read.optional(roles),
      incarnation: read.optional(read.count),
      upSince: read.optional(read.time),
      membershipVersion: read.optional(read.count),
      coordinator: read.optional(key),
      successor: read.optional(key),
      unreachable: read.optional(read.list(key, C.members)),
      reachability: read.optional(read.list(reachabilityRecord, C.reachability)),
      sbr: read.optional(sbr),
      singletons: read.optional(read.list(singleton, C.singletons)),
      election: read.optional(election),
      entities: read.optional(entities),
    }),
  ),
  unset: read.optional(read.list(read.oneOf(...OPTIONAL_FIELDS), OPTIONAL_FIELDS.length)),
  members: read.optional(
    read.object<MembersDelta>({
      put: read.list(memberRow, C.members),
      keys: read.optional(read.list(key, C.members)),
    }),
  ),
  machines: read.optional(
    read.object<MachinesDelta>({
      put: read.list(machine, C.machines),
      keys: read.optional(read.list(read.path, C.machines)),
    }),
  ),
  partitions: read.optional(partitionsDelta),
});

const wireEvent = read.object<WireEvent>({
  at: read.time,
  event: eventName,
  msg: read.optional(text),
  fields: (v, path) => {
    const copy = data(v, path);
    if (typeof copy !== 'object' || copy === null || Array.isArray(copy))
      throw new FieldError(path, 'must be a map');
    return copy as Record<string, unknown>;
  },
});

export function registerConsoleMessages(types: MessageTypes): void {
  if (types.has('console.update')) return;
  types.register(
    'console.subscribe',
    schema<ConsoleSubscribe>(
      { from: key, leaseMs: read.count, full: read.optional(read.boolean) },
      (m) => [m.from],
      'member',
    ),
  );
  types.register(
    'console.update',
    schema<ConsoleUpdate>(
      {
        from: key,
        view: read.optional(readWireView),
        version: read.optional(read.count),
        delta: read.optional(readViewDelta),
        events: read.list(wireEvent, C.eventsPerUpdate),
      },
      // the view is about its sender, or it is forged
      (m) => (m.view ? [m.from, m.view.key] : [m.from]),
      'member',
    ),
  );
}
