import { connect, type Socket } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Packr } from 'msgpackr';
import type { ClusterEvent } from '../../packages/cluster/src/index.js';
import type { NodeAddress } from '../../packages/core/src/index.js';
import type { WireConfig } from '../../packages/wire/src/index.js';
import { type ClusterNode, freePorts, startClusterNode } from './cluster-nodes.js';
import { startFloodPool } from './flood-pool.js';
import { eventually } from './wait.js';

/**
 * The attacks of issue 25's third finding, each against real nodes on loopback and each
 * returning its figures; shared by test/security and `pnpm bench security`. Every scenario
 * closes what it started.
 */

/**
 * `ips` source addresses × `perIp` TCP connections that never say a word, each reopened as soon
 * as the node cuts it (after its upgrade timeout): no secret needed. Returns the stop function.
 */
export function silentSockets(port: number, ips = 8, perIp = 8): () => void {
  let attacking = true;
  const sockets = new Set<Socket>();
  const open = (ip: string) => {
    if (!attacking) return;
    const socket = connect({ host: '127.0.0.1', port, localAddress: ip });
    sockets.add(socket);
    socket.on('error', () => {});
    socket.once('close', () => {
      sockets.delete(socket);
      setTimeout(() => open(ip), 20);
    });
  };
  for (let i = 0; i < ips; i++) for (let k = 0; k < perIp; k++) open(`127.0.0.${101 + i}`);
  return () => {
    attacking = false;
    for (const s of sockets) s.destroy();
  };
}

/**
 * A seed on 127.0.0.1 whose seed list names the joiner (as a StatefulSet's does), optionally
 * under the silent-socket attack, then a join from 127.0.0.20. Returns the ms from starting the
 * joiner to the seed seeing it up, or undefined when that took longer than `withinMs`.
 */
export async function joinUnderAttack(
  wire: Partial<WireConfig>,
  attack: boolean,
  withinMs: number,
): Promise<number | undefined> {
  const [portA, portB] = (await freePorts(2)) as [number, number];
  const seeds: NodeAddress[] = [
    { host: '127.0.0.1', port: portA },
    { host: '127.0.0.20', port: portB },
  ];
  const nodes: ClusterNode[] = [];
  let stopAttack = () => {};
  try {
    const a = await startClusterNode(portA, seeds, {}, wire);
    nodes.push(a);
    await a.cluster.whenUp();
    if (attack) {
      stopAttack = silentSockets(portA);
      // the attack reaches its target: the unknown sources hold every slot open to them
      const open = a.transport.config.maxPendingUpgrades - a.transport.config.reservedHandshakeSlots;
      await eventually(() => a.transport.pendingUpgradeCount >= open, {
        what: 'the silent sockets to hold the slots',
      });
    }
    const started = performance.now();
    nodes.push(await startClusterNode(portB, seeds, {}, wire, '127.0.0.20'));
    const up = () => a.cluster.state().membership?.members.filter((m) => m.status === 'up').length === 2;
    try {
      await eventually(up, { what: 'the joiner up', timeoutMs: withinMs });
    } catch {
      return undefined;
    }
    return performance.now() - started;
  } finally {
    stopAttack();
    await Promise.all(nodes.map((n) => n.transport.close()));
  }
}

export interface FloodFigures {
  /** Flooding connections that authenticated. */
  readonly authenticated: number;
  /** Flooded messages delivered to their actor on the coordinator. */
  readonly delivered: number;
  /** The event loop's worst and 99th-percentile delay during the flood (monitorEventLoopDelay). */
  readonly maxStallMs: number;
  readonly p99StallMs: number;
  /** `member.unreachable` events any of the three members published during the flood. */
  readonly unreachable: number;
}

/** One frame of valid envelopes just under 1000 KiB (the user lane's 1 MiB limit), to `/user/flood-sink`. */
function floodFrame(uid: string): Buffer {
  const packr = new Packr({ useRecords: false });
  // a batch frame: [toUid, routes, route index, message, …] (packages/wire/src/batch-frame.ts)
  const frame: unknown[] = [uid, [['/user/flood-sink', null]]];
  for (let n = 0; ; n++) {
    frame.push(0, { type: 'flood.n', n });
    if (n % 1000 === 999 && packr.pack(frame).length > 1000 * 1024) break;
  }
  return packr.pack(frame.slice(0, -2000));
}

/** Four connections per source address: under the per-address handshake quota. */
const flooderIp = (i: number) => `127.0.5.${1 + Math.floor(i / 4)}`;

/**
 * Three members in this process; `flooders` authenticated non-members (a worker thread) flood
 * the coordinator with 1 MiB frames of valid messages for `floodMs`. The members share this
 * process's event loop, so a stall delays every member's timers and heartbeats.
 */
export async function floodCoordinator(
  wire: Partial<WireConfig>,
  flooders = 40,
  floodMs = 3000,
): Promise<FloodFigures> {
  const ports = (await freePorts(3)) as [number, number, number];
  const seeds = [{ host: '127.0.0.1', port: ports[0] }];
  const nodes: ClusterNode[] = [];
  let stopPool = async () => {};
  try {
    for (const port of ports) nodes.push(await startClusterNode(port, seeds, {}, wire));
    const [a] = nodes as [ClusterNode];
    await eventually(
      () => a.cluster.state().membership?.members.filter((m) => m.status === 'up').length === 3,
      { what: 'three members up', timeoutMs: 20_000 },
    );
    let delivered = 0;
    a.transport.system.messageTypes.register(['flood.n']);
    a.transport.system.functionRef('flood-sink', () => delivered++, 'user');
    const events: ClusterEvent[] = [];
    for (const n of nodes) n.cluster.subscribe((e) => events.push(e));
    const pool = await startFloodPool(
      a.transport.port,
      flooders,
      (i) => ({
        cluster: 'it',
        secret: 's',
        host: flooderIp(i),
        port: 40_000 + i,
        uid: `flood-${i}`,
        lane: 'user',
      }),
      flooderIp,
    );
    stopPool = () => pool.stop();
    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    await pool.flood(floodFrame(a.cluster.self.uid), floodMs);
    delay.disable();
    return {
      authenticated: pool.authenticated,
      delivered,
      maxStallMs: delay.max / 1e6,
      p99StallMs: delay.percentile(99) / 1e6,
      unreachable: events.filter((e) => e.type === 'member.unreachable').length,
    };
  } finally {
    await stopPool();
    await Promise.all(nodes.map((n) => n.transport.close()));
  }
}

/**
 * The flood defences turned off: one turn decodes everything queued on every connection (as the
 * per-connection budgets together did), the system lane takes 1 MiB frames, no connection caps.
 */
export const FLOOD_DEFENCES_OFF: Partial<WireConfig> = {
  inboundTurnBudgetMs: 60_000,
  maxSystemFrameBytes: 1024 * 1024,
  maxInboundConnections: Number.POSITIVE_INFINITY,
  maxInboundPerIdentity: Number.POSITIVE_INFINITY,
};
