import { Worker } from 'node:worker_threads';
import { Packr, Unpackr } from 'msgpackr';
import { type HelloFields, helloFrame } from './raw-peer.js';

/**
 * Many authenticated raw peers on one worker thread (startFlooder's, many times over): each
 * connection has its own identity, and all flood together, so the node under test shares its
 * event loop with none of them. The main thread computes the hellos; the worker moves bytes.
 */
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const WebSocket = require('ws');
const sockets = [];
const codes = [];
for (let i = 0; i < workerData.count; i++) {
  const local = workerData.localAddresses[i];
  const ws = new WebSocket(workerData.url, { perMessageDeflate: false, ...(local ? { localAddress: local } : {}) });
  sockets.push(ws);
  ws.on('error', () => {});
  let stage = 0;
  ws.on('message', (d) => {
    if (stage === 0) { stage = 1; parentPort.postMessage({ challenge: d, i }); }
    else if (stage === 1) { stage = 2; parentPort.postMessage({ welcome: i }); }
  });
  ws.on('close', (code) => { codes.push(code); parentPort.postMessage({ closed: code, i }); });
}
parentPort.on('message', (m) => {
  if (m.hello) sockets[m.i].send(Buffer.from(m.hello));
  if (m.flood) {
    const frame = Buffer.from(m.flood);
    const end = Date.now() + m.ms;
    let sent = 0;
    const burst = () => {
      if (Date.now() > end) { parentPort.postMessage({ sent }); return; }
      for (const ws of sockets) {
        for (let k = 0; k < 4 && ws.readyState === 1 && ws.bufferedAmount < (1 << 21); k++) { ws.send(frame); sent++; }
      }
      setTimeout(burst, 1);
    };
    burst();
  }
});
`;

export interface FloodPool {
  /** Connections that completed the handshake. */
  readonly authenticated: number;
  /** Every connection sends `frame` as fast as its socket takes it for `ms`; resolves with the frames sent. */
  flood(frame: Buffer, ms: number): Promise<number>;
  stop(): Promise<void>;
}

/**
 * Opens `count` connections to 127.0.0.1:`port`, the i-th from `localAddress(i)` (a node takes
 * only a few unauthenticated connections per source address at once) and authenticated as
 * `hello(i)` (whose host must be that address when the node checks sources).
 */
export async function startFloodPool(
  port: number,
  count: number,
  hello: (i: number) => HelloFields,
  localAddress: (i: number) => string | undefined = () => undefined,
): Promise<FloodPool> {
  const localAddresses = Array.from({ length: count }, (_, i) => localAddress(i));
  const worker = new Worker(WORKER, {
    eval: true,
    workerData: { url: `ws://127.0.0.1:${port}/doyen`, count, localAddresses },
  });
  const unplain = new Unpackr({ useRecords: false });
  const plain = new Packr({ useRecords: false });
  let authenticated = 0;
  const welcomed = new Promise<void>((resolve, reject) => {
    const settled = new Set<number>();
    const done = (i: number) => {
      settled.add(i);
      if (settled.size === count) resolve();
    };
    worker.on('error', reject);
    worker.on('message', (m: Record<string, unknown>) => {
      if ('challenge' in m) {
        const i = m.i as number;
        const [, , nonce] = unplain.unpack(Buffer.from(m.challenge as Uint8Array)) as [
          number,
          number,
          Buffer,
        ];
        worker.postMessage({ i, hello: plain.pack(helloFrame({ port }, Buffer.from(nonce), hello(i))) });
      } else if ('welcome' in m) {
        authenticated++;
        done(m.welcome as number);
      } else if ('closed' in m) done(m.i as number);
    });
  });
  await welcomed;
  return {
    get authenticated() {
      return authenticated;
    },
    flood: (frame, ms) =>
      new Promise<number>((resolve) => {
        const on = (m: Record<string, unknown>) => {
          if ('sent' in m) {
            worker.off('message', on);
            resolve(m.sent as number);
          }
        };
        worker.on('message', on);
        worker.postMessage({ flood: frame, ms });
      }),
    stop: async () => {
      await worker.terminate();
    },
  };
}
