import { Worker } from 'node:worker_threads';
import { Packr, Unpackr } from 'msgpackr';
import { type HelloFields, helloFrame } from './raw-peer.js';

/**
 * An authenticated raw peer on its own thread, so its sending loop does not share the event
 * loop of the node under test. The main thread computes the hello (it has the wire's code);
 * the worker only moves bytes.
 */
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const WebSocket = require('ws');
const ws = new WebSocket(workerData.url, { perMessageDeflate: false });
ws.on('error', () => {});
let stage = 0;
ws.on('message', (d) => {
  if (stage === 0) { stage = 1; parentPort.postMessage({ challenge: d }); }
  else if (stage === 1) { stage = 2; parentPort.postMessage({ welcome: true }); }
});
ws.on('close', (code) => parentPort.postMessage({ closed: code }));
parentPort.on('message', (m) => {
  if (m.hello) ws.send(Buffer.from(m.hello));
  if (m.flood) {
    const frame = Buffer.from(m.flood);
    const end = Date.now() + m.ms;
    let sent = 0;
    const burst = () => {
      if (Date.now() > end || ws.readyState !== 1) { parentPort.postMessage({ sent }); return; }
      for (let i = 0; i < 2000 && ws.bufferedAmount < (1 << 20); i++) { ws.send(frame); sent++; }
      setImmediate(burst);
    };
    burst();
  }
});
`;

export interface Flooder {
  /** Sends `frame` as fast as the socket takes it for `ms`; resolves with the number of frames sent. */
  flood(frame: Buffer, ms: number): Promise<number>;
  stop(): Promise<void>;
}

export async function startFlooder(port: number, hello: HelloFields): Promise<Flooder> {
  const worker = new Worker(WORKER, { eval: true, workerData: { url: `ws://127.0.0.1:${port}/doyen` } });
  const next = (key: string) =>
    new Promise<Record<string, unknown>>((resolve) => {
      const on = (m: Record<string, unknown>) => {
        if (key in m) {
          worker.off('message', on);
          resolve(m);
        }
      };
      worker.on('message', on);
    });
  const challenge = (await next('challenge')).challenge as Uint8Array;
  const [, , nonce] = new Unpackr({ useRecords: false }).unpack(Buffer.from(challenge)) as [
    number,
    number,
    Buffer,
  ];
  const welcomed = next('welcome');
  worker.postMessage({
    hello: new Packr({ useRecords: false }).pack(helloFrame({ port }, Buffer.from(nonce), hello)),
  });
  await welcomed;
  return {
    flood: async (frame, ms) => {
      const done = next('sent');
      worker.postMessage({ flood: frame, ms });
      return (await done).sent as number;
    },
    stop: async () => {
      await worker.terminate();
    },
  };
}
