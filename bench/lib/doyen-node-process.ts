// Child process for the messaging bench: a doyen node on 127.0.0.1 with these actors,
//   /user/counter     function actor: counts `bench.inc` and checks that `n` arrives in sequence
//   /user/echo        function actor: answers each `bench.ping` with a `bench.pong` to its `replyTo`
//   /user/echo-actor  the same as an xstate actor (`fromTransition`), so through a mailbox
//   /system/hb        function actor: records how long each `bench.hb` took from the parent's send
//                     to here (system lane)
// The parent drives it over IPC (see bench-messages.ts); the node's own traffic is all doyen.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import {
  BENCH_CLUSTER,
  BENCH_SECRET,
  CHILD_MESSAGE_TYPES,
  type ChildReady,
  type ChildReply,
  type ChildRequest,
  type CountReply,
  type Heartbeat,
  type Inc,
  nowUs,
  type Ping,
} from './bench-messages.js';
import { WsTransport } from './doyen.js';
import { echoLogic } from './echo-logic.js';
import { tlsFromEnv } from './tls-bench-env.js';

if (!process.send) {
  console.error('doyen-node-process reports over IPC: spawn it with an ipc stdio channel');
  process.exit(2);
}
const reply = (message: ChildReply | ChildReady) => process.send?.(message);

const transport = await WsTransport.start({
  cluster: BENCH_CLUSTER,
  host: '127.0.0.1',
  port: 0,
  wire: { secret: BENCH_SECRET, ...tlsFromEnv() },
});
const system = transport.system;
system.messageTypes.register([...CHILD_MESSAGE_TYPES]);

let count = 0;
let outOfOrder = 0;
let countWaiter: { id: number; n: number } | undefined;
let delaysUs: number[] = [];
let heartbeatWaiter: { id: number; n: number } | undefined;
/** Sampled only while the parent asks for it: the histogram's 1 ms timer is extra work for the loop. */
let loopDelay: ReturnType<typeof monitorEventLoopDelay> | undefined;

function countReply(id: number): CountReply {
  return {
    id,
    count,
    outOfOrder,
    deadLetters: system.deadLetters.count,
    rejected: system.metrics.total('doyen_wire_rejected_total'),
  };
}

function checkWaiters(): void {
  if (countWaiter && count >= countWaiter.n) {
    reply(countReply(countWaiter.id));
    countWaiter = undefined;
  }
  if (heartbeatWaiter && delaysUs.length >= heartbeatWaiter.n) {
    const loopDelayP99Ms = loopDelay ? loopDelay.percentile(99) / 1e6 : Number.NaN;
    loopDelay?.disable();
    loopDelay = undefined;
    reply({ id: heartbeatWaiter.id, delaysUs, loopDelayP99Ms });
    heartbeatWaiter = undefined;
  }
}

const counter = system.functionRef(
  'counter',
  (message) => {
    if ((message as Inc).n !== count) outOfOrder++;
    count++;
    if (countWaiter && count >= countWaiter.n) checkWaiters();
  },
  'user',
);

const echo = system.functionRef(
  'echo',
  (message) => {
    const ping = message as Ping;
    ping.replyTo.send({ type: 'bench.pong', n: ping.n });
  },
  'user',
);

const echoActor = system.spawn(echoLogic, { name: 'echo-actor' });

const heartbeat = system.functionRef(
  'hb',
  (message) => {
    delaysUs.push(nowUs() - (message as Heartbeat).sentUs);
    if (heartbeatWaiter) checkWaiters();
  },
  'system',
);

process.on('message', (request: ChildRequest) => {
  switch (request.cmd) {
    case 'reset':
      count = 0;
      outOfOrder = 0;
      delaysUs = [];
      loopDelay?.disable();
      loopDelay = undefined;
      if (request.watchLoop) {
        loopDelay = monitorEventLoopDelay({ resolution: 1 });
        loopDelay.enable();
      }
      reply({ id: request.id });
      return;
    case 'await-count':
      countWaiter = { id: request.id, n: request.n };
      checkWaiters();
      return;
    case 'await-heartbeats':
      heartbeatWaiter = { id: request.id, n: request.n };
      checkWaiters();
      return;
  }
});

reply({
  ready: true,
  counter: counter.id,
  echo: echo.id,
  echoActor: echoActor.id,
  heartbeat: heartbeat.id,
});

// Never outlive the parent: the IPC channel closes when it exits, however it exits.
process.on('disconnect', () => {
  void transport.close().finally(() => process.exit(0));
});
