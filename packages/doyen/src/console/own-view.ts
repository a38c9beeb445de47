import {
  type Cluster,
  coordinatorOf,
  DOWNING_PATH,
  type DowningContext,
  defaultStableAfterMs,
  memberKey,
  oldestFirst,
  type SbrResolution,
} from '@doyen/cluster';
import type { ElectedCoordinator } from '@doyen/election';
import type { PartitionService } from '@doyen/partitions';
import type { ClusterSingletons } from '@doyen/singleton';
import { toPlain } from '../inspector/safe-json.js';
import { CONSOLE_CAPS, type WireView } from './console-messages.js';
import type { MachineTracker } from './machine-tracker.js';
import type { ConsoleMemberRow, ReachabilityRecord, SbrStateView } from './node-view.js';

/** What the console reads of its node, at each view: everything changes when the node restarts. */
export interface ConsoleNode {
  readonly cluster: Cluster;
  readonly singletons?: ClusterSingletons;
  readonly partitions?: PartitionService | undefined;
  readonly coordinator?: ElectedCoordinator | undefined;
  readonly incarnations?: number;
  /** Sharded entities (GET /cluster/shards' shape): their counts per type go into the view. */
  readonly sharding?:
    | {
        shards(): {
          readonly regions: readonly {
            readonly typeName: string;
            readonly shards: readonly { readonly numEntities: number }[];
          }[];
        };
      }
    | undefined;
}

interface DowningSnapshot {
  readonly value: unknown;
  readonly context?: DowningContext;
}

/**
 * Builds this node's NodeView from what it knows now. Stateful only for what a snapshot does not
 * say: when the node was first seen up, when the split-brain resolver started waiting and when
 * its last decision was made (a resolution carries no time).
 */
export class OwnView {
  private upSince: number | undefined;
  private waitingSince: number | undefined;
  private lastDecision: { resolution: SbrResolution; at: number } | undefined;

  constructor(
    private readonly node: ConsoleNode,
    private readonly machines: MachineTracker,
    private readonly now: () => number = Date.now,
  ) {}

  build(): WireView {
    const cluster = this.node.cluster;
    const state = cluster.state();
    const m = state.membership;
    const at = this.now();
    if (this.upSince === undefined && (state.status === 'up' || state.status === 'leaving'))
      this.upSince = at;
    const live = (m?.members ?? []).slice(0, CONSOLE_CAPS.members);
    const ordered = oldestFirst(live, {
      statuses: ['joining', 'up', 'leaving', 'exiting', 'down', 'removed'],
    });
    const rank = new Map(ordered.map((x, i) => [memberKey(x), i]));
    const members: ConsoleMemberRow[] = live.map((x) => ({
      key: memberKey(x),
      address: x.address,
      status: x.status,
      roles: x.roles.slice(0, CONSOLE_CAPS.roles),
      ageRank: rank.get(memberKey(x)) ?? ordered.length,
    }));
    const { coordinator, successor } = this.coordinatorAndSuccessor(live);
    const self = state.self ?? live.find((x) => memberKey(x) === cluster.self.key);
    return {
      key: cluster.self.key,
      address: cluster.self.address,
      ...(cluster.self.name !== cluster.self.address ? { name: cluster.self.name.slice(0, 256) } : {}),
      roles: (self?.roles ?? cluster.self.roles).slice(0, CONSOLE_CAPS.roles),
      incarnation: this.node.incarnations ?? 1,
      ...(this.upSince !== undefined ? { upSince: this.upSince } : {}),
      at,
      membershipVersion: m?.version ?? 0,
      members,
      ...(coordinator ? { coordinator } : {}),
      ...(successor ? { successor } : {}),
      unreachable: cluster.unreachableHere().slice(0, CONSOLE_CAPS.members),
      reachability: reachabilityOf(cluster),
      sbr: this.sbr(live.length, at),
      singletons: this.singletons(),
      ...this.election(),
      ...this.partitionsView(),
      ...this.entities(),
      machines: this.machines.views(),
    };
  }

  private coordinatorAndSuccessor(live: Parameters<typeof oldestFirst>[0]): {
    coordinator?: string;
    successor?: string;
  } {
    const cluster = this.node.cluster;
    const m = cluster.state().membership;
    const elected = this.node.coordinator;
    const keyAt = (address: string | undefined) => {
      const x = address ? cluster.state().membership?.members.find((y) => y.address === address) : undefined;
      return x ? memberKey(x) : undefined;
    };
    const coordinator = elected
      ? keyAt(elected.coordinator())
      : m
        ? coordinatorOf(m) && memberKey(coordinatorOf(m)!)
        : undefined;
    // the successor: the oldest up member after the coordinator, who takes over when it goes
    const next = oldestFirst(live).find((x) => memberKey(x as never) !== coordinator) as
      | { address: string; uid: string }
      | undefined;
    return {
      ...(coordinator ? { coordinator } : {}),
      ...(next ? { successor: memberKey(next) } : {}),
    };
  }

  private sbr(size: number, at: number): SbrStateView {
    const cluster = this.node.cluster;
    const system = cluster.system;
    const ref = system.lookup(DOWNING_PATH);
    const snapshot = ref ? (system.snapshotOf(ref) as DowningSnapshot | undefined) : undefined;
    const stateText = snapshot ? stateValueText(snapshot.value) : undefined;
    const waiting = stateText === 'unstable.waiting';
    if (waiting) this.waitingSince ??= at;
    else this.waitingSince = undefined;
    const resolution = snapshot?.context?.lastDecision;
    if (resolution && this.lastDecision?.resolution !== resolution) this.lastDecision = { resolution, at };
    const stableAfter = cluster.config.sbr.stableAfterMs ?? defaultStableAfterMs(Math.max(1, size));
    const last = this.lastDecision;
    return {
      strategy: String(cluster.config.downing).slice(0, 256),
      ...(stateText ? { state: stateText.slice(0, 256) } : {}),
      stableInMs:
        waiting && this.waitingSince !== undefined ? Math.max(0, this.waitingSince + stableAfter - at) : null,
      ...(last
        ? {
            lastDecision: {
              at: last.at,
              decision: last.resolution.decision,
              reason: last.resolution.reason.slice(0, CONSOLE_CAPS.text),
              downed: last.resolution.down.slice(0, CONSOLE_CAPS.members),
            },
          }
        : {}),
    };
  }

  private singletons(): WireView['singletons'] {
    const list = this.node.singletons?.list() ?? [];
    return list.slice(0, CONSOLE_CAPS.singletons).map((s) => {
      const text = stateValueText(s.managerState) ?? '';
      return {
        name: s.name.slice(0, 256),
        host: s.oldest,
        runsHere: s.runsHere,
        state: toPlain(s.managerState, { maxDepth: 4, maxItems: 16, maxString: 120, maxNodes: 64 }) ?? null,
        ...(/hand/i.test(text) ? { handingOver: true } : {}),
      };
    });
  }

  private election(): Pick<WireView, 'election'> {
    const elected = this.node.coordinator;
    if (!elected) return {};
    const v = elected.view();
    return { election: { kind: elected.kind, term: v.term, leader: v.leader ?? null } };
  }

  private entities(): Pick<WireView, 'entities'> {
    const regions = this.node.sharding?.shards().regions;
    if (!regions || regions.length === 0) return {};
    const entities: Record<string, number> = {};
    for (const r of regions.slice(0, CONSOLE_CAPS.entityTypes))
      if (r.typeName !== '__proto__')
        entities[r.typeName.slice(0, 256)] = r.shards.reduce((n, s) => n + s.numEntities, 0);
    return { entities };
  }

  private partitionsView(): Pick<WireView, 'partitions'> {
    const table = this.node.partitions?.table();
    if (!table) return {};
    return {
      partitions: {
        version: table.version,
        owners: table.owners.slice(0, CONSOLE_CAPS.partitions),
        backups: table.backups
          .slice(0, CONSOLE_CAPS.partitions)
          .map((b) => b.slice(0, CONSOLE_CAPS.backupsPerPartition)),
      },
    };
  }
}

/** The records the split-brain resolver decides on: who reports whom unreachable, and the downed. */
function reachabilityOf(cluster: Cluster): ReachabilityRecord[] {
  const records: ReachabilityRecord[] = [];
  for (const [subject, observers] of Object.entries(cluster.unreachableObservers()))
    for (const observer of observers) records.push({ observer, subject, status: 'unreachable' });
  const m = cluster.state().membership;
  for (const x of m?.members ?? [])
    if (x.status === 'down')
      records.push({ observer: cluster.self.key, subject: memberKey(x), status: 'terminated' });
  return records.slice(0, CONSOLE_CAPS.reachability);
}

/** `unstable.waiting` for `{ unstable: 'waiting' }`. */
export function stateValueText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value !== 'object' || value === null) return undefined;
  const [k, v] = Object.entries(value as Record<string, unknown>)[0] ?? [];
  if (k === undefined) return undefined;
  const rest = stateValueText(v);
  return rest ? `${k}.${rest}` : k;
}
