import { Packr, Unpackr } from 'msgpackr';
import WebSocket, { WebSocketServer } from 'ws';
import {
  decodeHello,
  encodeChallenge,
  encodeHello,
  encodeWelcome,
  NodeIdentity,
  PROTOCOL_VERSION,
  signedHello,
  signedWelcome,
  transcriptOf,
} from '../../packages/wire/src/index.js';

/** The wire's msgpack framing without records, for frames written and read by hand. */
export const plain = new Packr({ useRecords: false });
export const unplain = new Unpackr({ useRecords: false });

export interface RawPeer {
  readonly socket: WebSocket;
  /** The port dialled on 127.0.0.1: the hello's default target. */
  readonly port: number;
  readonly closed: Promise<{ code: number; reason: string }>;
  send(value: unknown): void;
  sendRaw(data: Buffer | string): void;
}

export type RawPeerWithChallenge = RawPeer & { challenge: Promise<{ nonce: Buffer }> };

/** A bare `ws` client that speaks (or abuses) the wire protocol by hand. */
export async function connectRaw(
  port: number,
  options: { localAddress?: string } = {},
): Promise<RawPeerWithChallenge> {
  const socket = new WebSocket(`ws://127.0.0.1:${port}/doyen`, {
    ...(options.localAddress ? { localAddress: options.localAddress } : {}),
    perMessageDeflate: false,
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  socket.on('error', () => {});
  const challenge = new Promise<{ nonce: Buffer }>((resolve) =>
    socket.once('message', (data: Buffer) => {
      const frame = unplain.unpack(data) as [number, number, Buffer];
      resolve({ nonce: Buffer.from(frame[2]) });
    }),
  );
  await new Promise((resolve, reject) => {
    socket.once('open', resolve);
    socket.once('error', reject);
  });
  return {
    socket,
    port,
    closed,
    challenge,
    send: (value) => socket.send(plain.pack(value)),
    sendRaw: (data) => socket.send(data),
  };
}

export interface HelloFields {
  version?: number;
  cluster: string;
  secret: string;
  /** The identity claimed (defaults: 127.0.0.1:1#rawpeer). */
  host?: string;
  port?: number;
  uid?: string;
  lane?: 'system' | 'user';
  /** The `host:port` the hello says it meant to reach (default: the address dialled). */
  target?: string;
  /** The identity key the hello is signed with (default: one shared by raw peers, no member's). */
  identity?: NodeIdentity;
}

/** The identity key raw peers sign with unless a test gives its own (a key no member has). */
export const rawPeerIdentity = NodeIdentity.generate();

/** The hello frame (as an array) answering a challenge nonce, signed with `f.identity`. */
export function helloFrame(peer: Pick<RawPeer, 'port'>, challengeNonce: Buffer, f: HelloFields): unknown[] {
  const { hello } = signedHello(
    {
      version: f.version ?? PROTOCOL_VERSION,
      cluster: f.cluster,
      host: f.host ?? '127.0.0.1',
      port: f.port ?? 1,
      uid: f.uid ?? 'rawpeer',
      lane: f.lane ?? ('user' as const),
      target: f.target ?? `127.0.0.1:${peer.port}`,
      nonce: Buffer.alloc(16, 3),
    },
    challengeNonce,
    f.secret,
    f.identity ?? rawPeerIdentity,
  );
  return encodeHello(hello);
}

/** Completes a correct (or deliberately wrong) handshake; resolves once the welcome arrived. */
export async function handshake(peer: RawPeerWithChallenge, f: HelloFields) {
  const { nonce } = await peer.challenge;
  const welcome = new Promise<unknown>((resolve) =>
    peer.socket.once('message', (d: Buffer) => resolve(unplain.unpack(d))),
  );
  peer.send(helloFrame(peer, nonce, f));
  return welcome;
}

/** Batch frames in the sequential-records encoding the wire uses. */
export function batchPackr(): Packr {
  return new Packr({ sequential: true, useRecords: true });
}

export interface FakeAcceptor {
  readonly port: number;
  /** Frames received from dialers, in order. */
  readonly received: Buffer[];
  close(): Promise<void>;
}

/**
 * A `ws` server that plays the acceptor by hand. By default it answers like a node with the
 * secret would, but welcomes as `welcomeAs`; `onConnection` replaces the whole script (fuzzing).
 */
export async function startFakeAcceptor(
  port: number,
  options: {
    secret?: string;
    welcomeAs?: { host: string; port: number; uid: string };
    /** The key the welcome is signed with (default: the raw peers' key). */
    identity?: NodeIdentity;
    onConnection?: (socket: WebSocket) => void;
  },
): Promise<FakeAcceptor> {
  const received: Buffer[] = [];
  const wss = new WebSocketServer({ host: '127.0.0.1', port, path: '/doyen', perMessageDeflate: false });
  wss.on('connection', (socket) => {
    socket.on('error', () => {});
    socket.on('message', (d: Buffer) => received.push(d));
    if (options.onConnection) {
      options.onConnection(socket);
      return;
    }
    const nonce = Buffer.alloc(16, 9);
    socket.send(plain.pack(encodeChallenge({ version: PROTOCOL_VERSION, nonce })));
    socket.once('message', (d: Buffer) => {
      const hello = decodeHello(unplain.unpack(d));
      if (!hello || !options.welcomeAs) return;
      const welcome = signedWelcome(
        options.welcomeAs,
        transcriptOf(hello, nonce),
        options.secret ?? 'sesame',
        options.identity ?? rawPeerIdentity,
      );
      socket.send(plain.pack(encodeWelcome(welcome)));
    });
  });
  await new Promise((resolve) => wss.once('listening', resolve));
  return {
    port,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        for (const c of wss.clients) c.terminate();
        wss.close(() => resolve());
      }),
  };
}
