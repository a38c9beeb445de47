// Child process for the raw ws baselines: a bare `ws` server, so the parent measures a real process hop.
// The request path picks the job:
//   /count?n=N  decode msgpackr frames (an envelope or an array of them) and reply 'done' after N envelopes
//   /echo       decode each frame and answer with one small msgpackr frame (ping-pong latency)
// With DOYEN_BENCH_WIRE_TLS (see tls-bench-env.ts) it listens for `wss` with mutual TLS, as doyen's wire
// does: the raw baseline of the messaging bench's TLS section.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import { pack, unpack } from 'msgpackr';
import { type RawData, type WebSocket, WebSocketServer } from 'ws';
import type { Envelope } from './envelope.js';
import { tlsFromEnv } from './tls-bench-env.js';

if (!process.send) {
  console.error('raw-ws-receiver reports its port over IPC: spawn it with an ipc stdio channel');
  process.exit(2);
}

const { tls } = tlsFromEnv();
const https = tls
  ? createServer({
      ca: readFileSync(tls.caFile),
      cert: readFileSync(tls.certFile),
      key: readFileSync(tls.keyFile),
      requestCert: true,
      rejectUnauthorized: true,
      minVersion: 'TLSv1.2',
    })
  : undefined;
const server = https
  ? new WebSocketServer({ server: https, perMessageDeflate: false })
  : new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false });
https?.listen(0, '127.0.0.1');

server.on('connection', (ws, req) => {
  const url = new URL(req.url ?? '/', 'ws://receiver');
  if (url.pathname === '/count') count(ws, Number(url.searchParams.get('n')));
  else if (url.pathname === '/echo') echo(ws);
  else ws.close(1008, `unknown path ${url.pathname}`);
});

function count(ws: WebSocket, expected: number): void {
  let received = 0;
  ws.on('message', (data: RawData) => {
    const decoded = unpack(data as Buffer) as Envelope | Envelope[];
    // Look at every envelope, as a router would, so decoding work cannot be skipped.
    if (Array.isArray(decoded)) for (const env of decoded) received += env.msg.type === 'inc' ? 1 : 0;
    else received += decoded.msg.type === 'inc' ? 1 : 0;
    if (received === expected) ws.send('done');
  });
}

function echo(ws: WebSocket): void {
  ws.on('message', (data: RawData) => {
    const ping = unpack(data as Buffer) as Envelope;
    ws.send(pack({ to: '/user/pinger', msg: { type: 'pong', n: ping.msg.n } } satisfies Envelope));
  });
}

(https ?? server).on('listening', () => {
  const address = (https ?? server).address();
  if (address === null || typeof address === 'string') throw new Error(`unexpected address ${address}`);
  process.send?.({ port: address.port });
});

// Never outlive the parent: the IPC channel closes when it exits, however it exits.
process.on('disconnect', () => process.exit(0));
