// A node process of `pnpm bench fanout`, raw kind: the same topology and traffic as fanout-doyen-node.ts
// with nothing but `ws` and msgpackr, the ceiling for it. Each node listens, connects to every other node
// and sends envelopes `{ to, msg }` to random target paths there (the nodes round-robin), batched as in
// raw-ws.ts (one msgpackr frame of ≤64 KiB per batch, flushed at the end of each event-loop turn); a
// receiver routes each envelope to its target's counter by path, as a router would, and records latency.
import { setImmediate as nextTurn } from 'node:timers/promises';
import { pack, unpack } from 'msgpackr';
import { type RawData, type WebSocket, WebSocketServer } from 'ws';
import { nowUs } from './bench-messages.js';
import {
  FAN_MESSAGE_TYPE,
  type FanMessage,
  type FanoutReady,
  type FanoutReply,
  type FanoutRequest,
  LatencyRecord,
} from './fanout-protocol.js';
import { withTimeout } from './timeout.js';
import { connect, sendWithBackpressure } from './ws-client.js';

if (!process.send) {
  console.error('fanout-raw-node reports over IPC: spawn it with an ipc stdio channel');
  process.exit(2);
}
const reply = (message: FanoutReply | FanoutReady) => process.send?.(message);

const ACTORS = Number(process.env.FANOUT_ACTORS ?? 1_000);
/** Messages produced per event-loop turn: as many as the doyen node's kicks make (256 × 16). */
const PER_TURN = 4_096;
const BATCH_BYTES = 64 * 1024;

type Envelope = { to: string; msg: FanMessage };

const paths = Array.from({ length: ACTORS }, (_, i) => `/user/t${i}`);
const indexOf = new Map(paths.map((path, i) => [path, i]));
const counts = new Uint32Array(ACTORS);

let record = new LatencyRecord(0);
let received = 0;
let expected = 0;
let arrived: (() => void) | undefined;

const server = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false });
server.on('connection', (ws: WebSocket) => {
  ws.on('message', (data: RawData) => {
    const batch = unpack(data as Buffer) as Envelope[];
    for (const env of batch) {
      const i = indexOf.get(env.to);
      if (i === undefined || env.msg.type !== FAN_MESSAGE_TYPE) continue;
      counts[i]!++;
      record.add(nowUs() - env.msg.sentUs);
      received++;
    }
    if (received >= expected) arrived?.();
  });
});
await new Promise<void>((resolve) => server.once('listening', resolve));

type Peer = { ws: WebSocket; targets: string[]; batch: Envelope[] };
let peers: Peer[] = [];
let perFrame = 1;

async function run(id: number, messages: number): Promise<void> {
  expected += messages;
  const all = new Promise<void>((resolve) => {
    arrived = () => {
      if (received >= expected) resolve();
    };
    arrived();
  });
  const startUs = nowUs();
  const cpuAtStart = process.cpuUsage();
  const eluAtStart = performance.eventLoopUtilization();
  let sent = 0;
  let nextPeer = 0;
  while (sent < messages) {
    const k = Math.min(PER_TURN, messages - sent);
    for (let i = 0; i < k; i++) {
      const peer = peers[nextPeer]!;
      nextPeer = nextPeer + 1 === peers.length ? 0 : nextPeer + 1;
      const to = peer.targets[(Math.random() * peer.targets.length) | 0]!;
      peer.batch.push({ to, msg: { type: FAN_MESSAGE_TYPE, sentUs: nowUs() } });
      if (peer.batch.length === perFrame) await flush(peer);
    }
    sent += k;
    for (const peer of peers) await flush(peer);
    await nextTurn();
  }
  await withTimeout(all, 120_000, `raw node: ${expected} messages received`);
  const endUs = nowUs();
  const cpu = process.cpuUsage(cpuAtStart);
  const elu = performance.eventLoopUtilization(eluAtStart).utilization;
  const latenciesUs = record.sample();
  record = new LatencyRecord(messages);
  reply({ id, startUs, endUs, received, latenciesUs, lost: 0, cpuUs: cpu.user + cpu.system, elu });
}

/** Sends the peer's batch as one frame; waits only when ws has over 1 MiB queued (backpressure). */
async function flush(peer: Peer): Promise<void> {
  if (peer.batch.length === 0) return;
  const frame = pack(peer.batch);
  peer.batch = [];
  const wait = sendWithBackpressure(peer.ws, frame);
  if (wait) await wait;
}

process.on('message', (request: FanoutRequest) => {
  switch (request.cmd) {
    case 'peers':
      void Promise.all(
        request.peers.map(async (p) => ({
          ws: await connect(`ws://127.0.0.1:${p.port}/`),
          targets: p.targets,
          batch: [],
        })),
      ).then((connected) => {
        peers = connected;
        // sized on the longest path and a large timestamp, under an array32 header (as raw-ws.ts does)
        const longest = paths[paths.length - 1]!;
        const size = pack({ to: longest, msg: { type: FAN_MESSAGE_TYPE, sentUs: nowUs() } }).length;
        perFrame = Math.max(1, Math.floor((BATCH_BYTES - 5) / size));
        reply({ id: request.id });
      });
      return;
    case 'run':
      run(request.id, request.messages).catch((error: Error) => {
        console.error(error.message);
        process.exit(1);
      });
      return;
  }
});

const address = server.address();
if (address === null || typeof address === 'string') throw new Error(`unexpected address ${address}`);
reply({ ready: true, port: address.port, targets: paths });

// Never outlive the parent: the IPC channel closes when it exits, however it exits.
process.on('disconnect', () => process.exit(0));
