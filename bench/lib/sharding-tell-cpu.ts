// CPU per message of a sharded tell against a plain remote tell, in this process (two nodes over
// real sockets on 127.0.0.1: one sends, the other hosts every partition and the plain actors), in
// interleaved rounds. CPU time, not wall time: the figure the machine's load distorts least (the
// wall-clock ratio of `pnpm bench sharding --hot-path` moves with whatever else runs). Both nodes
// are in this process, so a figure is the sender's and the receiver's CPU together.
import { type ActorRef, fromTransition, type Message } from '../../packages/core/src/index.js';
import {
  type ShardingNode,
  shardingNodesClosedAfterEach,
  startShardingCluster,
  tableOver,
} from '../../test/support/sharding-nodes.js';
import { median } from './stats.js';

export interface TellCpu {
  /** Median µs of CPU per message over the rounds: to `entities` sharded entities on the other node. */
  readonly shardedUs: number;
  /** The same to `entities` plain actors on the other node (remote refs). */
  readonly plainUs: number;
  /** The same to one plain actor on the other node (the wire's best case). */
  readonly plainOneUs: number;
  /**
   * Of the figures above, the sending loop's own CPU per message (the sends' synchronous part:
   * entity ref, region and batching, or the remote ref; not the wire's encoding after it): where
   * the sender's cost goes, beside the whole.
   */
  readonly sendUs: { readonly sharded: number; readonly plain: number; readonly plainOne: number };
  readonly rounds: number;
  readonly messages: number;
  readonly entities: number;
}

type Tell = { readonly type: 'sb.tell' };
const TELL: Tell & Message = { type: 'sb.tell' };

/** Interleaved rounds of `messages` tells each: one plain, one sharded, one plain to one actor. */
export async function measureTellCpu(messages: number, rounds: number, entities = 1000): Promise<TellCpu> {
  const closers: (() => Promise<void>)[] = [];
  const nodes = shardingNodesClosedAfterEach((fn) => closers.push(fn));
  try {
    const [sender, host] = (await startShardingCluster(2, nodes)) as [ShardingNode, ShardingNode];
    const counted = { sharded: 0, plain: 0 };
    const counter = (kind: keyof typeof counted) =>
      fromTransition((n: number, _e: Tell) => {
        counted[kind]++;
        return n + 1;
      }, 0);
    for (const n of [sender, host]) n.node.transport.system.messageTypes.register(['sb.tell']);
    const entityType = sender.sharding.register('sb-tell', counter('sharded'));
    host.sharding.register('sb-tell', counter('sharded'));
    const table = tableOver([host]);
    for (const n of [sender, host]) n.partitions.adopt(table);
    const hostSystem = host.node.transport.system;
    const plainLogic = counter('plain');
    for (let k = 0; k < entities; k++) hostSystem.spawn(plainLogic, { name: `sb-plain-${k}` });
    const senderSystem = sender.node.transport.system;
    const targets: Record<'sharded' | 'plain' | 'plainOne', ActorRef[]> = {
      sharded: Array.from({ length: entities }, (_, k) => entityType.ref(`sb-${k}`)),
      plain: Array.from({ length: entities }, (_, k) =>
        senderSystem.remoteRef(hostSystem.node, `/user/sb-plain-${k}`),
      ),
      plainOne: [senderSystem.remoteRef(hostSystem.node, '/user/sb-plain-0')],
    };
    const sendUs = { sharded: [] as number[], plain: [] as number[], plainOne: [] as number[] };
    const round = async (kind: keyof typeof targets): Promise<number> => {
      const count = kind === 'sharded' ? 'sharded' : 'plain';
      const before = counted[count];
      const refs = targets[kind];
      const cpu = process.cpuUsage();
      let sending = 0;
      let chunk = process.cpuUsage();
      for (let m = 0; m < messages; m++) {
        refs[m % refs.length]!.send(TELL);
        // as an app's sends come: a turn of the event loop now and then
        if (m % 2000 === 1999) {
          const spent = process.cpuUsage(chunk);
          sending += spent.user + spent.system;
          await new Promise((resolve) => setImmediate(resolve));
          chunk = process.cpuUsage();
        }
      }
      sendUs[kind].push(sending / messages);
      const until = performance.now() + 30_000;
      while (counted[count] - before < messages && performance.now() < until)
        await new Promise((resolve) => setTimeout(resolve, 1));
      const used = process.cpuUsage(cpu);
      return (used.user + used.system) / messages;
    };
    // the first rounds activate the entities and warm every path up
    for (const kind of ['sharded', 'plain', 'plainOne'] as const) await round(kind);
    for (const xs of Object.values(sendUs)) xs.length = 0;
    const us = { sharded: [] as number[], plain: [] as number[], plainOne: [] as number[] };
    for (let r = 0; r < rounds; r++)
      for (const kind of ['plain', 'sharded', 'plainOne'] as const) us[kind].push(await round(kind));
    const at = (xs: number[]) => Math.round(median(xs) * 100) / 100;
    const at3 = (xs: number[]) => Math.round(median(xs) * 1000) / 1000;
    return {
      shardedUs: at(us.sharded),
      plainUs: at(us.plain),
      plainOneUs: at(us.plainOne),
      sendUs: { sharded: at3(sendUs.sharded), plain: at3(sendUs.plain), plainOne: at3(sendUs.plainOne) },
      rounds,
      messages,
      entities,
    };
  } finally {
    for (const close of closers) await close();
  }
}
