// The sharding bench's `--app` module (`doyen node --app bench/lib/sharding-app.ts`). On every node:
// the message types and the sharded counter (role `shard`: nodes started with `--roles shard` host
// it, the others only route). On hosting nodes also the plain sink actor of the remote tell
// baseline. On the node started with SHARDING_BENCH_LOAD_PORT (no role: it hosts nothing) the load
// generator, driven by the bench over HTTP on that port.
import type { DoyenNode } from '../../packages/doyen/src/index.js';
import { startLoadGenerator } from './sharding-load.js';
import {
  ACTIVATION_LOG_ENV,
  BENCH_MESSAGE_TYPES,
  COUNTER_TYPE,
  counterLogic,
  LOAD_PORT_ENV,
  SHARD_ROLE,
  SINK_NAME,
  sinkLogic,
} from './sharding-protocol.js';

/** Partitions are owned by the `shard` role only, so the load generator's node is proxy-only. */
export const config = { partitions: { role: SHARD_ROLE } };

let load: ReturnType<typeof startLoadGenerator> | undefined;

export function setup(node: DoyenNode): void {
  node.system.messageTypes.register([...BENCH_MESSAGE_TYPES]);
  const sharding = node.sharding;
  if (!sharding) throw new Error('the sharding bench needs partitions on (partitions.count > 0)');
  const counters = sharding.register(COUNTER_TYPE, counterLogic, {
    role: SHARD_ROLE,
    handOverSnapshot: true,
    // the overlap check reads every activation and stop from the log; --hot-path checks none
    activationLog: process.env[ACTIVATION_LOG_ENV] === 'debug' ? 'debug' : 'info',
  });
  if (node.cluster.self.roles.includes(SHARD_ROLE)) node.system.spawn(sinkLogic, { name: SINK_NAME });
  const port = process.env[LOAD_PORT_ENV];
  if (port === undefined) return;
  // the generator belongs to the process; a new incarnation hands it its node
  load ??= startLoadGenerator(Number(port));
  load.attach(node, counters);
}
