// `pnpm bench handshake`: what per-node identity keys cost a new connection. Three dialers, one
// after another in the same run, each completing HANDSHAKE_CONNECTIONS connections (default 300)
// on 127.0.0.1 and sending one message over each:
// - raw ws with the shared-secret-only handshake of protocol 3 (HMAC proofs, no keys): the baseline;
// - raw ws with protocol 4's keyed handshake (the same HMACs plus an Ed25519 signature each way,
//   built with doyen's own handshake functions): what the keys add, without doyen around it;
// - doyen itself: an Association dialling a WsTransport, from the dial to the message in the
//   receiver's inbox (connect-to-first-message), the whole path a node takes for a new peer.
// Each prints connections per second (sequential: one connection's latency is the rate's inverse)
// and p50/p99 connect-to-first-message, beside the baseline as a ratio; and the crypto alone.
import { createHmac } from 'node:crypto';
import { Packr, Unpackr } from 'msgpackr';
import WebSocket, { WebSocketServer } from 'ws';
import type { Message } from '../packages/core/src/index.js';
import {
  Association,
  decodeHello,
  encodeChallenge,
  encodeHello,
  encodeWelcome,
  helloSignatureValid,
  NodeIdentity,
  newNonce,
  PROTOCOL_VERSION,
  resolveWireConfig,
  signedHello,
  signedWelcome,
  transcriptOf,
  verifyNodeSignature,
  WsTransport,
  welcomeSignatureValid,
} from '../packages/wire/src/index.js';
import { median, percentile, printResult } from './lib/stats.js';

const CONNECTIONS = Number(process.env.HANDSHAKE_CONNECTIONS ?? 300);
const WARMUP = 30;
const SECRET = 'handshake-bench-secret';
const plain = new Packr({ useRecords: false });
const unplain = new Unpackr({ useRecords: false });

interface Figures {
  readonly connectionsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

function figuresOf(latenciesMs: number[], totalMs: number): Figures {
  return {
    connectionsPerSecond: Math.round((latenciesMs.length / totalMs) * 1000),
    p50Ms: round(median(latenciesMs)),
    p99Ms: round(percentile(latenciesMs, 99)),
  };
}

const round = (x: number, digits = 3) => Number(x.toFixed(digits));

/** Sequential connections through `connectOnce`, after a warm-up. */
async function measure(connectOnce: () => Promise<void>): Promise<Figures> {
  for (let i = 0; i < WARMUP; i++) await connectOnce();
  const latencies: number[] = [];
  const started = performance.now();
  for (let i = 0; i < CONNECTIONS; i++) {
    const t = performance.now();
    await connectOnce();
    latencies.push(performance.now() - t);
  }
  return figuresOf(latencies, performance.now() - started);
}

// ---- raw ws: the two handshakes by hand ---------------------------------------------------------

type Mode = 'secret-only' | 'keyed';

/** HMAC over length-prefixed parts, as protocol 3 computed its proofs. */
function hmacProof(label: string, parts: (string | number | Buffer)[]): Buffer {
  const h = createHmac('sha256', SECRET);
  const length = Buffer.alloc(4);
  for (const p of [label, ...parts]) {
    const bytes = Buffer.isBuffer(p) ? p : Buffer.from(String(p), 'utf8');
    length.writeUInt32BE(bytes.length);
    h.update(length);
    h.update(bytes);
  }
  return h.digest();
}

/** An acceptor answering either handshake, then counting the message after it. */
async function rawAcceptor(mode: Mode, identity: NodeIdentity) {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, path: '/doyen', perMessageDeflate: false });
  await new Promise((resolve) => wss.once('listening', resolve));
  const port = (wss.address() as { port: number }).port;
  wss.on('connection', (socket) => {
    const challenge = newNonce();
    socket.send(plain.pack(encodeChallenge({ version: PROTOCOL_VERSION, nonce: challenge })));
    socket.once('message', (data: Buffer) => {
      const frame = unplain.unpack(data) as unknown[];
      if (mode === 'secret-only') {
        const [, , cluster, host, hport, uid, lane, target, nonce, proof] = frame as [
          number,
          number,
          string,
          string,
          number,
          string,
          string,
          string,
          Buffer,
          Buffer,
        ];
        const parts = [PROTOCOL_VERSION, cluster, host, hport, uid, lane, target, challenge, nonce];
        if (!hmacProof('doyen-hello', parts).equals(proof)) return socket.close();
        const welcome = hmacProof('doyen-welcome', [...parts, '127.0.0.1', port, 'acceptor']);
        socket.send(plain.pack([2, '127.0.0.1', port, 'acceptor', welcome]));
      } else {
        const hello = decodeHello(frame)!;
        const transcript = transcriptOf(hello, challenge);
        if (!helloSignatureValid(hello, transcript)) return socket.close();
        const welcome = signedWelcome(
          { host: '127.0.0.1', port, uid: 'acceptor' },
          transcript,
          SECRET,
          identity,
        );
        socket.send(plain.pack(encodeWelcome(welcome)));
      }
      // the first message after the handshake: echo one byte, the dialer's clock stops on it
      socket.once('message', () => socket.send(Buffer.of(1)));
    });
  });
  return { port, close: () => new Promise<void>((resolve) => wss.close(() => resolve())) };
}

async function rawDial(mode: Mode, port: number, identity: NodeIdentity): Promise<void> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/doyen`, { perMessageDeflate: false });
  // frames can arrive in the same tick as 'open': queue them from the start
  const inbox: Buffer[] = [];
  let waiting: ((d: Buffer) => void) | undefined;
  ws.on('message', (d: Buffer) => {
    if (waiting) {
      const w = waiting;
      waiting = undefined;
      w(d);
    } else inbox.push(d);
  });
  const next = () =>
    inbox.length > 0
      ? Promise.resolve(inbox.shift()!)
      : new Promise<Buffer>((resolve) => {
          waiting = resolve;
        });
  ws.once('error', () => {});
  const [, , challenge] = unplain.unpack(await next()) as [number, number, Buffer];
  const fields = {
    version: PROTOCOL_VERSION,
    cluster: 'bench',
    host: '127.0.0.1',
    port: 1,
    uid: 'dialer',
    lane: 'user' as const,
    target: `127.0.0.1:${port}`,
    nonce: newNonce(),
  };
  const welcome = next();
  if (mode === 'secret-only') {
    const f = fields;
    const parts = [f.version, f.cluster, f.host, f.port, f.uid, f.lane, f.target, challenge, f.nonce];
    ws.send(plain.pack([1, ...Object.values(f), hmacProof('doyen-hello', parts)]));
    const [, , , , proof] = unplain.unpack(await welcome) as Buffer[];
    if (!hmacProof('doyen-welcome', [...parts, '127.0.0.1', port, 'acceptor']).equals(proof!))
      throw new Error('bad welcome');
  } else {
    const { hello, transcript } = signedHello(fields, Buffer.from(challenge), SECRET, identity);
    ws.send(plain.pack(encodeHello(hello)));
    const [, host, wport, uid, key, proof, signature] = unplain.unpack(await welcome) as unknown[];
    const decoded = {
      host: host as string,
      port: wport as number,
      uid: uid as string,
      publicKey: Buffer.from(key as Buffer).toString('base64url'),
      proof: proof as Buffer,
      signature: signature as Buffer,
    };
    if (!welcomeSignatureValid(decoded, transcript)) throw new Error('bad welcome signature');
  }
  const echoed = next();
  ws.send(plain.pack([['/user/inbox', 'acceptor', null, { type: 'bench.first' }]]));
  await echoed;
  ws.terminate();
}

async function rawFigures(mode: Mode): Promise<Figures> {
  const acceptorKey = NodeIdentity.generate();
  const dialerKey = NodeIdentity.generate();
  const acceptor = await rawAcceptor(mode, acceptorKey);
  try {
    return await measure(() => rawDial(mode, acceptor.port, dialerKey));
  } finally {
    await acceptor.close();
  }
}

// ---- doyen: an Association dialling a node ------------------------------------------------------

async function doyenFigures(): Promise<Figures> {
  const target = await WsTransport.start({
    cluster: 'bench',
    host: '127.0.0.1',
    port: 0,
    wire: { secret: SECRET },
  });
  const dialer = await WsTransport.start({
    cluster: 'bench',
    host: '127.0.0.1',
    port: 0,
    wire: { secret: SECRET },
  });
  target.system.messageTypes.register('bench.first');
  let arrived: (() => void) | undefined;
  target.system.functionRef('inbox', () => arrived?.(), 'user');
  const config = resolveWireConfig({ secret: SECRET });
  const identity = NodeIdentity.generate();
  const node = target.system.node;
  try {
    return await measure(async () => {
      const association = new Association(dialer.system, config, node, 'user', identity);
      const got = new Promise<void>((resolve) => (arrived = resolve));
      association.enqueue({
        to: '/user/inbox',
        toUid: node.uid,
        from: undefined,
        message: { type: 'bench.first' } as Message,
      });
      await got;
      association.close('bench: next connection');
    });
  } finally {
    await dialer.close(0);
    await target.close(0);
  }
}

/** Microseconds of the crypto each side adds per handshake: one signature made, one verified. */
function cryptoMicros(): { signUs: number; verifyUs: number; hmacUs: number } {
  const key = NodeIdentity.generate();
  const data = Buffer.alloc(200, 7);
  const signature = key.sign(data);
  const time = (n: number, fn: () => void) => {
    for (let i = 0; i < 200; i++) fn();
    const t = performance.now();
    for (let i = 0; i < n; i++) fn();
    return round(((performance.now() - t) * 1000) / n, 1);
  };
  return {
    signUs: time(2000, () => key.sign(data)),
    verifyUs: time(2000, () => verifyNodeSignature(key.publicKey, data, signature)),
    hmacUs: time(2000, () => createHmac('sha256', SECRET).update(data).digest()),
  };
}

const secretOnly = await rawFigures('secret-only');
const keyed = await rawFigures('keyed');
const doyen = await doyenFigures();
const crypto = cryptoMicros();
const table = [
  ['raw ws, protocol 3 (secret only): the baseline', secretOnly],
  ['raw ws, protocol 4 (secret + identity keys)', keyed],
  ['doyen Association -> WsTransport (protocol 4)', doyen],
] as const;
for (const [label, f] of table)
  console.log(
    `${label.padEnd(50)} ${String(f.connectionsPerSecond).padStart(6)} conn/s   p50 ${f.p50Ms} ms   p99 ${f.p99Ms} ms`,
  );
console.log(
  `Ed25519 sign ${crypto.signUs} µs, verify ${crypto.verifyUs} µs, HMAC ${crypto.hmacUs} µs (each side signs once and verifies once)`,
);
printResult({
  connections: CONNECTIONS,
  rawSecretOnlyConnectionsPerSecond: secretOnly.connectionsPerSecond,
  rawSecretOnlyP50Ms: secretOnly.p50Ms,
  rawKeyedConnectionsPerSecond: keyed.connectionsPerSecond,
  rawKeyedP50Ms: keyed.p50Ms,
  rawKeyedP99Ms: keyed.p99Ms,
  keyedVsSecretOnlyRate: round(keyed.connectionsPerSecond / secretOnly.connectionsPerSecond),
  doyenConnectionsPerSecond: doyen.connectionsPerSecond,
  doyenConnectToFirstMessageP50Ms: doyen.p50Ms,
  doyenConnectToFirstMessageP99Ms: doyen.p99Ms,
  doyenVsRawKeyedRate: round(doyen.connectionsPerSecond / keyed.connectionsPerSecond),
  doyenVsRawSecretOnlyRate: round(doyen.connectionsPerSecond / secretOnly.connectionsPerSecond),
  ed25519SignUs: crypto.signUs,
  ed25519VerifyUs: crypto.verifyUs,
  hmacUs: crypto.hmacUs,
});
