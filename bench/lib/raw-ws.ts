// Raw `ws` + msgpackr between two processes on 127.0.0.1: the ceiling for any remote tell or ask.
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import { pack, unpack } from 'msgpackr';
import type WebSocket from 'ws';
import type { WireTlsConfig } from './doyen.js';
import { type Envelope, incEnvelope } from './envelope.js';
import { startReceiver } from './receiver-process.js';
import { percentile, perSecond } from './stats.js';
import { withTimeout } from './timeout.js';
import { tlsEnv } from './tls-bench-env.js';
import { connect, nextMessage, sendWithBackpressure } from './ws-client.js';

export type RemoteRateOptions = {
  messages: number;
  /** Largest frame in bytes; 0 sends one frame per message. */
  batchBytes: number;
  /** Mutual TLS (`wss`), each side with its own certificate of one CA, as doyen's wire with `wire.tls`. */
  tls?: { sender: WireTlsConfig; receiver: WireTlsConfig };
};

/** Round-trip figures in microseconds. */
export type Latency = { p50: number; p99: number };

/** Unmeasured traffic first, so both processes' JIT is warm when the clock starts. */
const WARMUP_MESSAGES = 100_000;
const WARMUP_ROUNDS = 2_000;
const RUN_TIMEOUT_MS = 30_000;

/** msgs/s from this process to a receiver child, timed until the child confirms it has decoded all of them. */
export async function rawWsMsgpackrRemoteRate({
  messages,
  batchBytes,
  tls,
}: RemoteRateOptions): Promise<number> {
  const receiver = await startReceiver(tls ? tlsEnv(tls.receiver) : {});
  const dial = tls ? clientTls(tls.sender) : undefined;
  try {
    await blast(receiver.port, Math.min(messages, WARMUP_MESSAGES), batchBytes, dial);
    return await blast(receiver.port, messages, batchBytes, dial);
  } finally {
    await receiver.stop();
  }
}

/** p50 and p99 round trip of one small msgpackr frame to a child that decodes it and answers. */
export async function rawWsPingPongLatency(rounds: number): Promise<Latency> {
  const receiver = await startReceiver();
  try {
    const ws = await connect(`ws://127.0.0.1:${receiver.port}/echo`);
    try {
      await withTimeout(pingPong(ws, WARMUP_ROUNDS), RUN_TIMEOUT_MS, 'ping-pong warmup');
      const rtts = await withTimeout(pingPong(ws, rounds), RUN_TIMEOUT_MS, 'ping-pong');
      return { p50: percentile(rtts, 50), p99: percentile(rtts, 99) };
    } finally {
      ws.terminate();
    }
  } finally {
    await receiver.stop();
  }
}

/** A `wss` dial's options: trust the CA only, no host name check (doyen's `wire.tls` default). */
function clientTls(tls: WireTlsConfig): WebSocket.ClientOptions {
  const options: ConnectionOptions = {
    ca: readFileSync(tls.caFile),
    cert: readFileSync(tls.certFile),
    key: readFileSync(tls.keyFile),
    rejectUnauthorized: true,
    minVersion: 'TLSv1.2',
    checkServerIdentity: () => undefined,
  };
  // ws hands these to tls.connect; its types describe checkServerIdentity otherwise
  return options as WebSocket.ClientOptions;
}

async function blast(
  port: number,
  messages: number,
  batchBytes: number,
  tls: WebSocket.ClientOptions | undefined,
): Promise<number> {
  const ws = await connect(`${tls ? 'wss' : 'ws'}://127.0.0.1:${port}/count?n=${messages}`, tls);
  try {
    const start = process.hrtime.bigint();
    await withTimeout(
      Promise.all([nextMessage(ws), sendAll(ws, messages, batchBytes)]),
      RUN_TIMEOUT_MS,
      `sending ${messages} messages`,
    );
    return perSecond(messages, start, process.hrtime.bigint());
  } finally {
    ws.terminate();
  }
}

async function sendAll(ws: WebSocket, messages: number, batchBytes: number): Promise<void> {
  if (batchBytes === 0) {
    for (let i = 0; i < messages; i++) {
      const wait = sendWithBackpressure(ws, pack(incEnvelope(i)));
      if (wait) await wait;
    }
    return;
  }
  // One pack() per frame: msgpackr's per-call cost is about half the work for envelopes this small.
  const perFrame = envelopesPerFrame(batchBytes, messages);
  let batch: Envelope[] = [];
  for (let i = 0; i < messages; i++) {
    batch.push(incEnvelope(i));
    if (batch.length < perFrame && i < messages - 1) continue;
    const wait = sendWithBackpressure(ws, pack(batch));
    batch = [];
    if (wait) await wait;
  }
}

/** How many envelopes always fit in `batchBytes`: sized on the largest `n`, under an array32 header. */
function envelopesPerFrame(batchBytes: number, messages: number): number {
  const largest = pack(incEnvelope(messages - 1)).length;
  const perFrame = Math.floor((batchBytes - 5) / largest);
  if (perFrame < 1) throw new RangeError(`batchBytes ${batchBytes} cannot hold one ${largest}-byte envelope`);
  return perFrame;
}

function pingPong(ws: WebSocket, rounds: number): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const rtts: number[] = [];
    let sentAt = 0n;
    const ping = () => {
      sentAt = process.hrtime.bigint();
      ws.send(pack({ to: '/user/ponger', msg: { type: 'ping', n: rtts.length } } satisfies Envelope));
    };
    const onMessage = (data: WebSocket.RawData) => {
      const pong = unpack(data as Buffer) as Envelope;
      rtts.push(Number(process.hrtime.bigint() - sentAt) / 1_000);
      if (pong.msg.n !== rtts.length - 1) return finish(new Error(`pong ${pong.msg.n} out of order`));
      if (rtts.length === rounds) return finish();
      ping();
    };
    const onClose = (code: number) => finish(new Error(`socket closed (${code})`));
    const finish = (error?: Error) => {
      ws.off('message', onMessage).off('close', onClose);
      if (error) reject(error);
      else resolve(rtts);
    };
    ws.on('message', onMessage).on('close', onClose);
    ping();
  });
}
