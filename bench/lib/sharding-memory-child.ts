// One child process of the sharding bench (argv: ENTITIES COLD_COUNT COLD_RATE PORT): a one-node
// doyen cluster (startNode, every partition owned here) with the sharded counter. First the cold
// activation on first message, local: `sb.get` asks to fresh ids at COLD_RATE/s, each starting an
// entity here. Then ENTITIES counters activated, and the process's RSS and heap with all of them
// active (after a full GC). Writes one JSON line on fd 3, a pipe of its own: the node's log lines go
// to stdout, and a large result written there could have one land inside it.
import { randomBytes } from 'node:crypto';
import { writeSync } from 'node:fs';
import { createNodeLogger, startNode } from '../../packages/doyen/src/index.js';
import { settleHeap } from './settle-heap.js';
import { BENCH_MESSAGE_TYPES, COUNTER_TYPE, counterLogic, type StateReply } from './sharding-protocol.js';

const [entities, coldCount, coldRate, port] = process.argv.slice(2).map(Number) as [
  number,
  number,
  number,
  number,
];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const node = await startNode(
  {
    cluster: 'sharding-memory',
    secret: randomBytes(8).toString('hex'),
    host: '127.0.0.1',
    port,
    seeds: [{ host: '127.0.0.1', port }],
    setup: (n) => {
      n.system.messageTypes.register([...BENCH_MESSAGE_TYPES]);
    },
  },
  // 300k `sharding.activated` lines would cost more than the entities
  { logger: createNodeLogger({ level: 'warn' }) },
);
const sharding = node.sharding!;
const counters = sharding.register(COUNTER_TYPE, counterLogic);
const deadline = Date.now() + 60_000;
while (sharding.shards().activePartitions.length < node.partitions!.partitionCount) {
  if (Date.now() > deadline) throw new Error('partitions did not become active on the one node');
  await sleep(50);
}

const get = (id: string) =>
  counters.ref(id).ask<StateReply>((replyTo) => ({ type: 'sb.get', replyTo }), { timeout: 5000 });
// warm the path up on other ids than the measured ones
for (let i = 0; i < 500; i++) await get(`warm-${i}`);
const cold: number[] = [];
const asks: Promise<void>[] = [];
const start = performance.now();
for (let i = 0; i < coldCount; i++) {
  const wait = start + (i * 1000) / coldRate - performance.now();
  // the finest tick timers give: a burst's queue is not an activation's latency
  if (wait > 0) await sleep(wait);
  const sentAt = performance.now();
  asks.push(get(`cold-${i}`).then(() => void cold.push(performance.now() - sentAt)));
}
await Promise.all(asks);

settleHeap();
const before = process.memoryUsage();
for (let i = 0; i < entities; i++) {
  counters.ref(`m-${i}`).send({ type: 'sb.tell' });
  if (i % 5000 === 4999) await new Promise((resolve) => setImmediate(resolve));
}
while (sharding.region.activeCount(COUNTER_TYPE) < entities + coldCount + 500) await sleep(50);
// let every mailbox drain before measuring
await get('m-0');
settleHeap();
const after = process.memoryUsage();
writeSync(
  3,
  `${JSON.stringify({
    entities: sharding.region.activeCount(COUNTER_TYPE),
    rss: after.rss,
    heapUsed: after.heapUsed,
    rssBefore: before.rss,
    heapBefore: before.heapUsed,
    cold,
  })}\n`,
);
await node.shutdown();
process.exit(0);
