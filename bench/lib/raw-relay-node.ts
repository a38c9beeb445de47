// A process of the sharding bench's raw ask baseline (`--hot-path`): nothing but `ws` and msgpackr on
// 127.0.0.1 (and doyen's partition hash, to spread asks), the optimum a remote ask between processes
// can reach on this machine. RAW_RELAY_ROLE:
//   echo       a `ws` server; decodes each ask and answers it on the same connection (the entity's node)
//   relay      a `ws` server that dials RAW_RELAY_UPSTREAM and passes each ask there, each answer back,
//              decoding and re-encoding both as a router would (a node in between)
//   generator  dials RAW_RELAY_TARGET (a port, or several separated by commas: each ask then goes to the
//              one its id hashes to, as an entity's id picks its owner) and, per IPC request
//              `{ prefix, count, rate }`, asks at that rate paced as the load generator paces its cold asks
//              (bench/lib/sharding-load.ts); answers the latencies in ms
// Servers report `{ port }` over IPC once listening, the generator `{ ready: true }` once connected.
import { pack, unpack } from 'msgpackr';
import { type RawData, type WebSocket, WebSocketServer } from 'ws';
import { partitionOf } from '../../packages/partitions/src/index.js';
import { connect } from './ws-client.js';

if (!process.send) {
  console.error('raw-relay-node reports over IPC: spawn it with an ipc stdio channel');
  process.exit(2);
}

/** An ask as the load generator's `sb.get` carries it: the target, the entity id and where to answer. */
interface Ask {
  readonly to: string;
  readonly msg: {
    readonly type: 'sb.get';
    readonly id: string;
    readonly replyTo: string;
    readonly n: number;
  };
}
interface Answer {
  readonly to: string;
  readonly msg: {
    readonly type: 'sb.state';
    readonly n: number;
    readonly count: number;
    readonly at: number;
  };
}

export interface RawAskRequest {
  readonly prefix: string;
  readonly count: number;
  readonly rate: number;
}
export interface RawAskResult {
  readonly ms: number[];
  readonly failed: number;
}

const role = process.env.RAW_RELAY_ROLE;
const reply = (message: unknown) => process.send?.(message);

function listen(onConnection: (ws: WebSocket) => void): void {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false });
  server.on('connection', onConnection);
  server.on('listening', () => {
    const address = server.address();
    reply({ port: typeof address === 'object' && address ? address.port : 0 });
  });
}

if (role === 'echo') {
  listen((ws) =>
    ws.on('message', (data: RawData) => {
      const ask = unpack(data as Buffer) as Ask;
      const answer: Answer = {
        to: ask.msg.replyTo,
        msg: { type: 'sb.state', n: ask.msg.n, count: 0, at: performance.timeOrigin + performance.now() },
      };
      ws.send(pack(answer));
    }),
  );
} else if (role === 'relay') {
  const upstream = await connect(`ws://127.0.0.1:${Number(process.env.RAW_RELAY_UPSTREAM)}/`);
  let downstream: WebSocket | undefined;
  upstream.on('message', (data: RawData) => downstream?.send(pack(unpack(data as Buffer) as Answer)));
  listen((ws) => {
    downstream = ws;
    ws.on('message', (data: RawData) => upstream.send(pack(unpack(data as Buffer) as Ask)));
  });
} else if (role === 'generator') {
  const ports = (process.env.RAW_RELAY_TARGET ?? '').split(',').map(Number);
  const targets = await Promise.all(ports.map((port) => connect(`ws://127.0.0.1:${port}/`)));
  const waiting = new Map<number, (answer: Answer) => void>();
  const onAnswer = (data: RawData) => {
    const answer = unpack(data as Buffer) as Answer;
    const done = waiting.get(answer.msg.n);
    waiting.delete(answer.msg.n);
    done?.(answer);
  };
  for (const ws of targets) ws.on('message', onAnswer);
  // the key hash entity ids are placed by: fresh ids spread over the targets as over their owners
  const targetOf = (id: string): WebSocket => targets[partitionOf(id, targets.length)]!;
  let next = 0;
  const ask = (id: string, timeoutMs: number): Promise<boolean> =>
    new Promise((resolve) => {
      const n = next++;
      const timer = setTimeout(() => {
        waiting.delete(n);
        resolve(false);
      }, timeoutMs);
      waiting.set(n, () => {
        clearTimeout(timer);
        resolve(true);
      });
      const message: Ask = {
        to: '/system/sharding/region',
        msg: { type: 'sb.get', id, replyTo: '/temp/ask', n },
      };
      targetOf(id).send(pack(message));
    });
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  process.on('message', async (request: RawAskRequest) => {
    // paced as LoadGenerator.paced with the cold asks' tick (0: the finest timers give)
    const runs: Promise<number>[] = [];
    const start = performance.now();
    for (let i = 0; i < request.count; i++) {
      const wait = start + (i * 1000) / request.rate - performance.now();
      if (wait > 0) await sleep(wait);
      const sentAt = performance.now();
      runs.push(ask(`${request.prefix}${i}`, 5000).then((ok) => (ok ? performance.now() - sentAt : -1)));
    }
    const results = await Promise.all(runs);
    reply({
      ms: results.filter((ms) => ms >= 0),
      failed: results.filter((ms) => ms < 0).length,
    } satisfies RawAskResult);
  });
  reply({ ready: true });
} else {
  console.error(`raw-relay-node: RAW_RELAY_ROLE must be echo, relay or generator (got ${role})`);
  process.exit(2);
}
