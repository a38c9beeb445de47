// A node process of `pnpm bench fanout`, doyen kind: a doyen node on 127.0.0.1 with FANOUT_ACTORS
// `fromTransition` actors (/user/t0 …). Each actor, kicked locally with `bench.go`, tells `n` messages to
// random actors of the other nodes (the nodes round-robin, the actor at random); a `bench.fan` arriving
// records its latency from the sender's timestamp. Driven by the parent over IPC (fanout-protocol.ts).
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { fromTransition } from 'xstate';
import { BENCH_CLUSTER, BENCH_SECRET, nowUs } from './bench-messages.js';
import { type ActorRef, type NodeAddress, WsTransport } from './doyen.js';
import {
  FAN_MESSAGE_TYPE,
  type FanMessage,
  type FanoutReady,
  type FanoutReply,
  type FanoutRequest,
  LatencyRecord,
} from './fanout-protocol.js';
import { withTimeout } from './timeout.js';

if (!process.send) {
  console.error('fanout-doyen-node reports over IPC: spawn it with an ipc stdio channel');
  process.exit(2);
}
const reply = (message: FanoutReply | FanoutReady) => process.send?.(message);

const ACTORS = Number(process.env.FANOUT_ACTORS ?? 1_000);
/** Tells per kick: the parent rounds each node's messages to a multiple of (nodes - 1) × 16. */
const PER_KICK = 16;
/**
 * Kicks per event-loop turn, and only while every outbound queue is under MAX_QUEUED (of 200k): about
 * what the raw node lets ws buffer per peer (1 MiB, ~30k envelopes), so latency is not queueing alone.
 */
const KICKS_PER_TURN = 256;
const MAX_QUEUED = 20_000;
/** Kicks not yet taken by their actors: the senders work off what they were given before getting more. */
const MAX_PENDING_KICKS = 2 * KICKS_PER_TURN;

type Go = { type: 'bench.go'; n: number };

const transport = await WsTransport.start({
  cluster: BENCH_CLUSTER,
  host: '127.0.0.1',
  port: 0,
  // FANOUT_WIRE: wire settings to try (JSON, e.g. '{"inboundTurnBudgetMs":10}'), set by `bench fanout --wire`
  wire: { ...(JSON.parse(process.env.FANOUT_WIRE ?? '{}') as object), secret: BENCH_SECRET },
});
const system = transport.system;
system.messageTypes.register([FAN_MESSAGE_TYPE]);

let peers: ActorRef<FanMessage>[][] = [];
let peerNodes: NodeAddress[] = [];
let nextPeer = 0;
let record = new LatencyRecord(0);
let received = 0;
let kicksDone = 0;
let expected = 0;
let arrived: (() => void) | undefined;

const actors = Array.from({ length: ACTORS }, (_, i) =>
  system.spawn(
    fromTransition((n: number, m: FanMessage | Go) => {
      if (m.type === FAN_MESSAGE_TYPE) {
        record.add(nowUs() - m.sentUs);
        if (++received >= expected) arrived?.();
      } else {
        kicksDone++;
        for (let k = 0; k < m.n; k++) {
          const node = peers[nextPeer]!;
          nextPeer = nextPeer + 1 === peers.length ? 0 : nextPeer + 1;
          node[(Math.random() * node.length) | 0]!.send({ type: FAN_MESSAGE_TYPE, sentUs: nowUs() });
        }
      }
      return n + 1;
    }, 0),
    { name: `t${i}` },
  ),
);

const queuedMost = () => Math.max(0, ...peerNodes.map((node) => transport.queued(node, 'user')));
const lost = () => system.deadLetters.count + system.metrics.total('doyen_wire_rejected_total');

async function run(id: number, messages: number): Promise<void> {
  // Counts are cumulative: another node may start this run's sends before this node hears of the run.
  expected += messages;
  const all = new Promise<void>((resolve) => {
    arrived = () => {
      if (received >= expected) resolve();
    };
    arrived();
  });
  const eluAtStart = performance.eventLoopUtilization();
  const profiler = process.env.FANOUT_PROF_DIR ? await startProfile() : undefined;
  const startUs = nowUs();
  const cpuAtStart = process.cpuUsage();
  const kicks = Math.ceil(messages / PER_KICK);
  let kicked = 0;
  let next = 0;
  const doneBefore = kicksDone;
  while (kicked < kicks) {
    if (queuedMost() < MAX_QUEUED && kicked - (kicksDone - doneBefore) < MAX_PENDING_KICKS) {
      const k = Math.min(KICKS_PER_TURN, kicks - kicked);
      for (let i = 0; i < k; i++) {
        actors[next]!.send({ type: 'bench.go', n: PER_KICK });
        next = next + 1 === actors.length ? 0 : next + 1;
      }
      kicked += k;
    }
    await nextTurn();
  }
  await withTimeout(all, 120_000, `node ${transport.system.nodeName}: ${expected} messages received`);
  const endUs = nowUs();
  const cpu = process.cpuUsage(cpuAtStart);
  const elu = performance.eventLoopUtilization(eluAtStart).utilization;
  if (profiler) await saveProfile(profiler, id);
  const latenciesUs = record.sample();
  record = new LatencyRecord(messages);
  reply({ id, startUs, endUs, received, latenciesUs, lost: lost(), cpuUs: cpu.user + cpu.system, elu });
}

/** `bench fanout --prof DIR`: a CPU profile of each node's measured rounds (the warm-up's too). */
async function startProfile(): Promise<Session> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return session;
}

async function saveProfile(session: Session, id: number): Promise<void> {
  const { profile } = await session.post('Profiler.stop');
  const file = join(process.env.FANOUT_PROF_DIR!, `fanout-doyen-${process.pid}-${id}.cpuprofile`);
  writeFileSync(file, JSON.stringify(profile));
  session.disconnect();
}

process.on('message', (request: FanoutRequest) => {
  switch (request.cmd) {
    case 'peers':
      peers = request.peers.map((p) => p.targets.map((target) => system.refFor<FanMessage>(target)));
      peerNodes = peers.map((refs) => refs[0]!.address.node);
      reply({ id: request.id });
      return;
    case 'run':
      run(request.id, request.messages).catch((error: Error) => {
        console.error(error.message);
        process.exit(1);
      });
      return;
  }
});

reply({ ready: true, port: transport.port, targets: actors.map((ref) => ref.id) });

// Never outlive the parent: the IPC channel closes when it exits, however it exits.
process.on('disconnect', () => {
  void transport.close().finally(() => process.exit(0));
});
