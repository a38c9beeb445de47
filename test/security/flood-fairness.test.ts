import { Packr } from 'msgpackr';
import { afterEach, describe, expect, it } from 'vitest';
import { batchFrameOf, CloseCode, type WireConfig } from '../../packages/wire/src/index.js';
import { FLOOD_DEFENCES_OFF, floodCoordinator } from '../support/attack-scenarios.js';
import { startTestNode, type TestNode } from '../support/nodes.js';
import { connectRaw, handshake, type RawPeer } from '../support/raw-peer.js';
import { eventually } from '../support/wait.js';

const nodes: TestNode[] = [];
const peers: RawPeer[] = [];
afterEach(async () => {
  for (const p of peers.splice(0)) p.socket.terminate();
  await Promise.all(nodes.splice(0).map((n) => n.transport.close()));
});

const FLOODERS = 40;

describe('issue 25 (3): 40 authenticated connections flooding 1 MiB frames', () => {
  it('share one decode budget: the event loop keeps turning and no member looks unreachable', async () => {
    const defended = await floodCoordinator({}, FLOODERS);
    console.log(JSON.stringify({ defended }));
    // the flood reached the decoder in volume: every connection authenticated, messages delivered
    expect(defended.authenticated).toBe(FLOODERS);
    expect(defended.delivered).toBeGreaterThan(100_000);
    // the old code: 511–593 ms with 16 connections; the detector's acceptable pause is 400 ms
    expect(defended.maxStallMs).toBeLessThan(250);
    expect(defended.unreachable).toBe(0);
  }, 60_000);

  it('positive control: with the defences off the same flood stalls the loop', async () => {
    const undefended = await floodCoordinator(FLOOD_DEFENCES_OFF, FLOODERS);
    console.log(JSON.stringify({ undefended }));
    expect(undefended.authenticated).toBe(FLOODERS);
    expect(undefended.maxStallMs).toBeGreaterThan(250);
  }, 60_000);
});

describe('issue 25 (3): the system lane takes smaller frames', () => {
  /** Sends one ~600 KB frame of valid messages on `lane`; resolves with the close code, or 'open' once they arrived. */
  async function bigFrameOn(lane: 'system' | 'user', wire: Partial<WireConfig>) {
    const n = await startTestNode({ wire });
    nodes.push(n);
    let delivered = 0;
    n.system.functionRef('sink', () => delivered++, lane);
    const raw = await connectRaw(n.transport.port);
    peers.push(raw);
    await handshake(raw, { cluster: 'test', secret: 'sesame', lane });
    // a batch frame names the recipient once (batch-frame.ts): ~20 bytes a message
    const envelopes = Array.from({ length: 30_000 }, (_, i) => [
      `/${lane}/sink`,
      n.system.node.uid,
      null,
      { type: 'test.n', n: i },
    ]);
    const frame = new Packr({ useRecords: false }).pack(batchFrameOf(envelopes));
    expect(frame.length).toBeGreaterThan(512 * 1024);
    raw.sendRaw(frame);
    return Promise.race([
      raw.closed.then((c) => c.code),
      eventually(() => delivered === envelopes.length && 'open', { what: 'the frame delivered' }),
    ]);
  }

  it('a frame over 512 KiB on the system lane closes the connection (1009); the user lane takes it', async () => {
    expect(await bigFrameOn('system', {})).toBe(CloseCode.tooBig);
    expect(await bigFrameOn('user', {})).toBe('open');
  });

  it('positive control: with the system lane at 1 MiB the same frame is decoded and delivered', async () => {
    expect(await bigFrameOn('system', { maxSystemFrameBytes: 1024 * 1024 })).toBe('open');
  });
});
