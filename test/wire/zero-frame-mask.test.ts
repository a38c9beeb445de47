// A node dials its peers with a zero frame mask (association.ts, zeroFrameMask): `ws` then neither
// copies nor XORs each frame it sends, and the receiving `ws` skips unmasking. Read from the bytes
// the dialer's socket writes: every frame after the upgrade is masked (the MASK bit, as RFC 6455
// asks of a client) with the key 0, and every message arrives. The positive control: a `ws`
// client with its default options, through the same capture, masks with a random key.
import { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { WS_PATH } from '../../packages/wire/src/protocol.js';
import { testNodesClosedAfterEach } from '../support/nodes.js';
import { eventually } from '../support/wait.js';

const node = testNodesClosedAfterEach();

type N = { type: 'test.n'; n: number };

/**
 * Bytes written by this process's sockets, per socket, while capturing; `to(port)` the streams of
 * those connected to `port` (a socket may be written to before it connects: the upgrade request).
 */
function captureWrites(): { to: (port: number) => Buffer[][]; clear: () => void; stop: () => void } {
  const streams = new Map<Socket, Buffer[]>();
  const write = Socket.prototype.write;
  Socket.prototype.write = function (this: Socket, chunk: unknown, ...rest: unknown[]) {
    if (Buffer.isBuffer(chunk) || typeof chunk === 'string') {
      const list = streams.get(this) ?? [];
      list.push(Buffer.from(chunk as Buffer));
      streams.set(this, list);
    }
    return (write as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
  } as typeof Socket.prototype.write;
  return {
    to: (port) => [...streams].filter(([socket]) => socket.remotePort === port).map(([, written]) => written),
    clear: () => streams.clear(),
    stop: () => void (Socket.prototype.write = write),
  };
}

interface FrameHead {
  readonly masked: boolean;
  readonly maskKey: Buffer;
  readonly length: number;
}

/** The frames a client wrote after its upgrade request (RFC 6455 §5.2 headers; payloads skipped). */
function framesOf(written: Buffer[]): FrameHead[] {
  const bytes = Buffer.concat(written);
  const headerEnd = bytes.indexOf('\r\n\r\n');
  if (headerEnd < 0 || !bytes.subarray(0, 4).equals(Buffer.from('GET '))) return [];
  const frames: FrameHead[] = [];
  let at = headerEnd + 4;
  while (at + 2 <= bytes.length) {
    const masked = (bytes[at + 1]! & 0x80) !== 0;
    let length = bytes[at + 1]! & 0x7f;
    let next = at + 2;
    if (length === 126) {
      length = bytes.readUInt16BE(next);
      next += 2;
    } else if (length === 127) {
      length = Number(bytes.readBigUInt64BE(next));
      next += 8;
    }
    const maskKey = masked ? bytes.subarray(next, next + 4) : Buffer.alloc(0);
    next += masked ? 4 : 0;
    if (next + length > bytes.length) break;
    frames.push({ masked, maskKey, length });
    at = next + length;
  }
  return frames;
}

let stopCapture: (() => void) | undefined;
afterEach(() => {
  stopCapture?.();
  stopCapture = undefined;
});

describe('the dialer frame mask', () => {
  it('frames to a peer are masked with the key 0 and arrive; a default ws client masks at random (control)', async () => {
    const a = await node();
    const b = await node();
    const capture = captureWrites();
    stopCapture = capture.stop;

    const inbox = a.system.refFor<N>(b.system.lookup('/user/inbox')!.id);
    for (let n = 0; n < 300; n++) inbox.send({ type: 'test.n', n });
    await eventually(() => b.inbox.length === 300, { what: 'every message at b' });
    expect(b.inbox.map((m) => (m as N).n)).toEqual(Array.from({ length: 300 }, (_, i) => i));

    const dialled = capture
      .to(b.transport.port)
      .map(framesOf)
      .filter((f) => f.length > 0);
    expect(dialled.length).toBeGreaterThan(0);
    const frames = dialled.flat();
    // the hello, then the batches: several frames, some of them long
    expect(frames.length).toBeGreaterThan(2);
    expect(frames.some((f) => f.length > 125)).toBe(true);
    for (const f of frames) {
      expect(f.masked).toBe(true);
      expect([...f.maskKey]).toEqual([0, 0, 0, 0]);
    }

    // control: the same capture sees a default client's random key
    capture.clear();
    const client = new WebSocket(`ws://127.0.0.1:${b.transport.port}${WS_PATH}`);
    client.on('error', () => {});
    await new Promise<void>((resolve, reject) => {
      client.once('open', () => resolve());
      client.once('unexpected-response', () => reject(new Error('the upgrade was refused')));
    });
    for (let k = 0; k < 4; k++) client.send(Buffer.from([0xc0, k]));
    await eventually(() => capture.to(b.transport.port).flatMap(framesOf).length >= 4, {
      what: 'the control client frames',
    });
    const controlFrames = capture.to(b.transport.port).flatMap(framesOf);
    client.terminate();
    expect(controlFrames.every((f) => f.masked)).toBe(true);
    expect(controlFrames.some((f) => f.maskKey.readUInt32BE(0) !== 0)).toBe(true);
  });
});
