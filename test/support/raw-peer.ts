import { Packr, Unpackr } from 'msgpackr';
import WebSocket from 'ws';
import { helloProof, PROTOCOL_VERSION } from '../../packages/wire/src/index.js';

const plain = new Packr({ useRecords: false });
const unplain = new Unpackr({ useRecords: false });

export interface RawPeer {
  readonly socket: WebSocket;
  readonly closed: Promise<{ code: number; reason: string }>;
  send(value: unknown): void;
  sendRaw(data: Buffer | string): void;
}

/** A bare `ws` client that speaks (or abuses) the wire protocol by hand. */
export async function connectRaw(port: number): Promise<RawPeer & { challenge: Promise<{ nonce: Buffer }> }> {
  const socket = new WebSocket(`ws://127.0.0.1:${port}/doyen`);
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
  uid?: string;
  lane?: 'system' | 'user';
}

/** Completes a correct (or deliberately wrong) handshake; resolves once the welcome arrived. */
export async function handshake(peer: RawPeer & { challenge: Promise<{ nonce: Buffer }> }, f: HelloFields) {
  const { nonce } = await peer.challenge;
  const fields = {
    version: f.version ?? PROTOCOL_VERSION,
    cluster: f.cluster,
    host: '127.0.0.1',
    port: 1,
    uid: f.uid ?? 'rawpeer',
    lane: f.lane ?? ('user' as const),
  };
  const proof = helloProof(f.secret, fields, nonce);
  const welcome = new Promise<unknown>((resolve) =>
    peer.socket.once('message', (d: Buffer) => resolve(unplain.unpack(d))),
  );
  peer.send([
    1,
    fields.version,
    fields.cluster,
    fields.host,
    fields.port,
    fields.uid,
    fields.lane,
    Buffer.alloc(16),
    proof,
  ]);
  return welcome;
}

/** Batch frames in the sequential-records encoding the wire uses. */
export function batchPackr(): Packr {
  return new Packr({ sequential: true, useRecords: true });
}
