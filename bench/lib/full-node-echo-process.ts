// An owner for remote-ask-cpu.ts (REMOTE_ASK_VARIANTS) that is a whole doyen node rather than a bare
// transport: startNode, a one-node cluster with the CLI's defaults (membership, failure detector, the
// 271 partitions, their owner lease, the partition keeper), and the same `fromTransition` echo actor as
// doyen-node-process.ts. Set beside that one, it shows what a node's own machinery adds to each remote
// ask it answers. FULL_NODE_PARTITIONS=0 leaves the partitions out.
import { createNodeLogger, startNode } from '../../packages/doyen/src/index.js';
import { BENCH_CLUSTER, BENCH_SECRET, CHILD_MESSAGE_TYPES, type ChildReady } from './bench-messages.js';
import { echoLogic } from './echo-logic.js';
import { freePorts } from './free-ports.js';

if (!process.send) {
  console.error('full-node-echo-process reports over IPC: spawn it with an ipc stdio channel');
  process.exit(2);
}
const [port] = await freePorts(1);
const partitions = process.env.FULL_NODE_PARTITIONS;
const node = await startNode(
  {
    cluster: BENCH_CLUSTER,
    secret: BENCH_SECRET,
    host: '127.0.0.1',
    port: port!,
    seeds: [{ host: '127.0.0.1', port: port! }],
    ...(partitions !== undefined ? { partitions: { count: Number(partitions) } } : {}),
    setup: (n) => {
      n.system.messageTypes.register([...CHILD_MESSAGE_TYPES]);
    },
  },
  { logger: createNodeLogger({ level: 'warn' }) },
);
const echoActor = node.system.spawn(echoLogic, { name: 'echo-actor' });
const ready: ChildReady = {
  ready: true,
  counter: echoActor.id,
  echo: echoActor.id,
  echoActor: echoActor.id,
  heartbeat: echoActor.id,
};
process.send(ready);
process.on('disconnect', () => {
  void node.shutdown().finally(() => process.exit(0));
});
