import { describe, expect, it } from 'vitest';
import { type Message, nodeKey, nodeOfKey } from '../../packages/core/src/index.js';
import type { PartitionService } from '../../packages/partitions/src/index.js';
import {
  EMPTY_CARGO,
  type HandOffCargo,
  type KeeperHost,
  type KeeperInbox,
} from '../../packages/sharding/src/partition-keeper/keeper-host.js';
import {
  KEEPER_PATH,
  startPartitionKeeper,
} from '../../packages/sharding/src/partition-keeper/keeper-machine.js';
import { type ClusterNode, freePorts } from '../support/cluster-nodes.js';
import { clusterNodesClosedAfterEach } from '../support/cluster-nodes-closed.js';
import { FakeOwnerLeases } from '../support/fake-owner-leases.js';
import { startPartitionNode } from '../support/partition-node.js';
import { eventually } from '../support/wait.js';

/**
 * The keeper machine on real nodes: the partition service's tables, the keeper's messages over
 * the wire (with their claims checked at the boundary) and a stand-in runtime that drains at once
 * and carries markers on the keeper's own path (no entity messages here, so nothing to order
 * them behind). Every partition becomes active at exactly its owner; a join moves some of them by
 * hand-off, never two active at once. A cargo of several MiB (far over the system lane's 512 KiB
 * frame limit) travels in parts and arrives whole; without parts (the positive control) the wire
 * refuses it.
 */

const P = 16;

interface KeeperNode extends ClusterNode {
  readonly service: PartitionService;
  readonly keeper: KeeperInbox;
  readonly leases: FakeOwnerLeases;
  readonly log: string[];
  /** The cargo each activation here came with, by partition. */
  readonly cargos: Map<number, HandOffCargo>;
}

interface KeeperNodeOptions {
  /** The cargo a drained partition hands over (default: none). */
  readonly cargoOf?: (partition: number) => HandOffCargo;
  readonly handOffPartBytes?: number;
  /** Off: hand-offs decided one step each, as a build before the gathering (hand-off-gather.ts). */
  readonly gatherHandOffs?: boolean;
}

async function startKeeperNode(
  port: number,
  seedPort: number,
  options: KeeperNodeOptions = {},
): Promise<KeeperNode> {
  const node = await startPartitionNode(port, seedPort, P);
  const { service } = node;
  const system = node.transport.system;
  const leases = new FakeOwnerLeases();
  const log: string[] = [];
  const cargos = new Map<number, HandOffCargo>();
  let keeper: KeeperInbox | undefined;
  const host: KeeperHost = {
    activate: (p, version, cargo) => {
      log.push(`activate ${p} v${version}`);
      cargos.set(p, cargo);
    },
    drain: (p) => {
      log.push(`drain ${p}`);
      queueMicrotask(() => keeper?.regionDrained(p));
    },
    takeCargo: (p) => options.cargoOf?.(p) ?? EMPTY_CARGO,
    reroute() {},
    deactivate: (p) => log.push(`deactivate ${p}`),
    startBuffering() {},
    flush() {},
    sendMarker: (to, marker) =>
      system
        .remoteRef(nodeOfKey(to), KEEPER_PATH)
        .send({ type: 'sharding.drain-marker', ...marker } as Message),
  };
  keeper = startPartitionKeeper({
    system,
    cluster: node.cluster,
    tables: service,
    partitionCount: P,
    leases,
    host,
    ...(options.handOffPartBytes !== undefined ? { handOffPartBytes: options.handOffPartBytes } : {}),
    ...(options.gatherHandOffs !== undefined ? { gatherHandOffs: options.gatherHandOffs } : {}),
  });
  return { ...node, service, keeper, leases, log, cargos };
}

/** About 5 MiB (JSON): 12,000 entities' snapshots (the first partition handed over carries it). */
const BIG_ENTITIES = 12_000;
function bigCargo(p: number): HandOffCargo {
  return {
    snapshots: Array.from({ length: BIG_ENTITIES }, (_, i) => ({
      entityType: 'cart',
      entityId: `cart-${p}-${i}`,
      snapshot: { status: 'active', context: { lines: [`sku-${i}`, `note ${'x'.repeat(300)}`], count: i } },
    })),
    forwarded: [],
  };
}

describe('partition keeper on real nodes', () => {
  const nodes = clusterNodesClosedAfterEach();

  /**
   * Three nodes settle, a fourth joins and takes partitions by hand-off. `gatherOf(i)`: whether
   * node i (0..3, the joiner last) gathers hand-offs; off is how a build before it takes them,
   * and the messages on the wire are the same either way.
   */
  async function joinMoves(gatherOf: (i: number) => boolean = () => true) {
    const [pa, pb, pc, pd] = await freePorts(4);
    const a = await startKeeperNode(pa!, pa!, { gatherHandOffs: gatherOf(0) });
    nodes.push(a);
    await a.cluster.whenUp();
    const b = await startKeeperNode(pb!, pa!, { gatherHandOffs: gatherOf(1) });
    const c = await startKeeperNode(pc!, pa!, { gatherHandOffs: gatherOf(2) });
    nodes.push(b, c);
    await Promise.all([b.cluster.whenUp(), c.cluster.whenUp()]);
    const all = () => nodes as KeeperNode[];
    const settled = () => {
      const table = a.service.table();
      if (!table || new Set(table.owners).size !== all().length) return false;
      for (const n of all()) if (n.service.table()?.version !== table.version) return false;
      for (let p = 0; p < P; p++) {
        const at = all().filter((n) => n.keeper.isActive(p));
        if (at.length !== 1 || nodeKey(at[0]!.transport.system.node) !== table.owners[p]) return false;
      }
      return true;
    };
    await eventually(settled, {
      what: 'every partition active at its owner on three nodes',
      timeoutMs: 15_000,
    });

    const d = await startKeeperNode(pd!, pa!, { gatherHandOffs: gatherOf(3) });
    nodes.push(d);
    await d.cluster.whenUp();
    // never two at once, while the move runs
    let overlaps = 0;
    const watch = setInterval(() => {
      for (let p = 0; p < P; p++) if (all().filter((n) => n.keeper.isActive(p)).length > 1) overlaps++;
    }, 1);
    try {
      await eventually(settled, {
        what: 'the partitions moved to the joiner, active once each',
        timeoutMs: 15_000,
      });
    } finally {
      clearInterval(watch);
    }
    expect(overlaps).toBe(0);
    expect(d.keeper.activePartitions().length).toBeGreaterThan(0);
    // the joiner's partitions came by hand-off from the old owners (drained there first)
    const drained = [a, b, c].flatMap((n) => n.log.filter((l) => l.startsWith('drain')));
    expect(drained.length).toBeGreaterThanOrEqual(d.keeper.activePartitions().length);
  }

  it('activates every partition at exactly its owner, then moves some by hand-off when a node joins', async () => {
    await joinMoves();
  }, 60_000);

  it('mixed builds: keepers that gather hand-offs and keepers that take them one step each move partitions between them', async () => {
    // the joiner takes one step per hand-off (an older build), the old owners gather
    await joinMoves((i) => i !== 3);
  }, 60_000);

  it('mixed builds, the other way: a gathering joiner takes hand-offs from old owners that do not gather', async () => {
    await joinMoves((i) => i === 3);
  }, 60_000);
});

describe('partition keeper on real nodes: a cargo of several MiB', () => {
  const nodes = clusterNodesClosedAfterEach();

  /** Two nodes settle, a third joins; the first partition drained for it carries the big cargo. */
  async function moveBigCargo(handOffPartBytes?: number) {
    const [pa, pb, pc] = await freePorts(3);
    let bigPartition: number | undefined;
    let armed = false;
    const cargoOf = (p: number) => {
      if (!armed || bigPartition !== undefined) return EMPTY_CARGO;
      bigPartition = p;
      return bigCargo(p);
    };
    // which node took the big cargo ("drain p" in a log may be an older move of p)
    let bigFrom: number | undefined;
    const optionsOf = (port: number) => ({
      cargoOf: (p: number) => {
        const cargo = cargoOf(p);
        if (cargo !== EMPTY_CARGO) bigFrom = port;
        return cargo;
      },
      ...(handOffPartBytes !== undefined ? { handOffPartBytes } : {}),
    });
    const a = await startKeeperNode(pa!, pa!, optionsOf(pa!));
    nodes.push(a);
    await a.cluster.whenUp();
    const b = await startKeeperNode(pb!, pa!, optionsOf(pb!));
    nodes.push(b);
    await b.cluster.whenUp();
    await eventually(
      () => {
        const table = a.service.table();
        return (
          table !== undefined &&
          new Set(table.owners).size === 2 &&
          Array.from({ length: P }, (_, p) => p).every((p) => a.keeper.isActive(p) || b.keeper.isActive(p))
        );
      },
      { what: 'every partition active on two nodes', timeoutMs: 15_000 },
    );
    armed = true;
    const c = await startKeeperNode(pc!, pa!, optionsOf(pc!));
    nodes.push(c);
    await c.cluster.whenUp();
    await eventually(() => bigPartition !== undefined, {
      what: 'a partition drained for the joiner',
      timeoutMs: 15_000,
    });
    const sender = [a, b, c].find((n) => n.transport.system.node.port === bigFrom)!;
    return { a, b, c, big: bigPartition!, sender };
  }

  it('hands a cargo over the frame limit over in parts: it arrives whole at the new owner', async () => {
    const { big, sender } = await moveBigCargo();
    const all = () => nodes as KeeperNode[];
    // the owner it moves to (the joiner, unless the allocator moved it elsewhere)
    const receiver = () => all().find((n) => n !== sender && n.keeper.isActive(big));
    await eventually(() => receiver() !== undefined, {
      what: 'the big partition active at its new owner',
      timeoutMs: 20_000,
    });
    expect(receiver()!.cargos.get(big)!.snapshots).toEqual(bigCargo(big).snapshots);
    expect(
      sender.transport.system.metrics.value('doyen_dead_letters_total', { reason: 'message-too-large' }),
    ).toBe(0);
  }, 60_000);

  it('positive control: sent whole, the same cargo is refused by the wire and never arrives', async () => {
    const { big, sender } = await moveBigCargo(Number.POSITIVE_INFINITY);
    const all = () => nodes as KeeperNode[];
    await eventually(
      () =>
        (sender.transport.system.metrics.value('doyen_dead_letters_total', {
          reason: 'message-too-large',
        }) ?? 0) > 0,
      { what: 'the wire refusing the hand-off', timeoutMs: 20_000 },
    );
    await new Promise((r) => setTimeout(r, 1000));
    // active nowhere (drained at its sender, never taken by its new owner); no cargo ever arrived
    expect(all().filter((n) => n.keeper.isActive(big))).toHaveLength(0);
    expect(all().some((n) => (n.cargos.get(big)?.snapshots.length ?? 0) > 0)).toBe(false);
  }, 60_000);
});
