import { Packr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import {
  HAND_OFF_PART_BYTES,
  joinPart,
  MAX_CARGO_ENTRY_BYTES,
  splitHandOff,
  withoutOversized,
} from '../../packages/sharding/src/partition-keeper/hand-off-parts.js';
import type {
  CargoMessage,
  CargoSnapshot,
} from '../../packages/sharding/src/partition-keeper/keeper-host.js';
import type { HandOff, HandOffPart } from '../../packages/sharding/src/partition-keeper/keeper-messages.js';

/**
 * A hand-off's cargo cut into parts under the system lane's 512 KiB frame limit and joined back in
 * order: every part encodes (as the wire does, msgpack) under the limit, the join gives back the
 * cargo exactly, a gap or a part of another hand-off discards the partial cargo, and an entry no
 * frame could carry is named (to be logged and counted), never dropped silently.
 */

const FRAME_LIMIT = 512 * 1024;
const stamp = { version: 3, round: 1, seq: 2 };

const snapshot = (i: number): CargoSnapshot => ({
  entityType: 'cart',
  entityId: `cart-${i}`,
  // floats encode larger in msgpack (9 bytes) than in JSON: the estimate's worst case
  snapshot: { items: Array.from({ length: 20 }, (_, k) => ({ sku: `sku-${k}`, price: i + k / 7 })) },
});
const message = (i: number): CargoMessage => ({
  entityType: 'cart',
  entityId: `cart-${i}`,
  partition: 7,
  payload: { type: 'add', sku: `sku-${i}`, text: 'é'.repeat(50) } as CargoMessage['payload'],
  sender: undefined,
  hops: 0,
});

const handOff = (snapshots: number, messages: number): HandOff => ({
  type: 'sharding.hand-off',
  from: '10.0.0.2:2552#u2',
  partition: 7,
  stamp,
  version: 3,
  cargo: {
    snapshots: Array.from({ length: snapshots }, (_, i) => snapshot(i)),
    forwarded: Array.from({ length: messages }, (_, i) => message(i)),
  },
});

function joinAll(parts: readonly HandOffPart[]): HandOff | string {
  let assembly: Parameters<typeof joinPart>[0];
  for (const part of parts) {
    const r = joinPart(assembly, part, 100_000);
    if (r.kind === 'complete') return r.handOff;
    if (r.kind === 'discarded') return r.why;
    assembly = r.assembly;
  }
  return 'incomplete';
}

describe('hand-off parts', () => {
  it('cuts a cargo of several MiB into parts that each encode under the frame limit, and joins it back exactly', () => {
    const h = handOff(6000, 3000);
    const packr = new Packr({ useRecords: false });
    const whole = packr.pack(h).length;
    expect(whole).toBeGreaterThan(4 * 1024 * 1024);
    const parts = splitHandOff(h) as HandOffPart[];
    expect(parts.length).toBeGreaterThan(whole / FRAME_LIMIT);
    for (const [i, part] of parts.entries()) {
      expect(part).toMatchObject({ type: 'sharding.hand-off-part', index: i, total: parts.length });
      expect(packr.pack(part).length).toBeLessThan(FRAME_LIMIT);
      expect(packr.pack(part).length).toBeLessThan(2.25 * HAND_OFF_PART_BYTES + 4096);
    }
    expect(joinAll(parts)).toEqual(h);
  });

  it('sends a small cargo whole, as one hand-off', () => {
    const h = handOff(3, 2);
    expect(splitHandOff(h)).toEqual([h]);
  });

  it('discards a partial cargo with a gap, a part of another hand-off, or one over the entry bound', () => {
    const parts = splitHandOff(handOff(10, 0), 1) as HandOffPart[];
    expect(parts).toHaveLength(10);
    expect(joinAll([parts[0]!, parts[1]!, parts[3]!])).toBe('a part missing (out of order)');
    expect(joinAll([parts[1]!])).toBe('a part without its first');
    const other = { ...parts[1]!, stamp: { ...stamp, seq: 3 } };
    expect(joinAll([parts[0]!, other])).toBe('a part of another hand-off');
    expect(joinPart(undefined, parts[0]!, 0)).toMatchObject({
      kind: 'discarded',
      why: 'cargo over the entry bound',
    });
    // a new first part restarts the join (the sender sent it all again)
    let assembly: Parameters<typeof joinPart>[0];
    for (const part of [parts[0]!, parts[1]!, ...parts]) {
      const r = joinPart(assembly, part, 100);
      if (r.kind === 'partial') assembly = r.assembly;
      else expect(r.kind).toBe(part.index === 9 ? 'complete' : 'partial');
    }
  });

  it('names the entries no frame could carry (to log and count), keeping the rest in order', () => {
    const big: CargoSnapshot = {
      entityType: 'cart',
      entityId: 'huge',
      snapshot: { blob: 'x'.repeat(MAX_CARGO_ENTRY_BYTES) },
    };
    const h = handOff(3, 1);
    const cargo = {
      snapshots: [h.cargo.snapshots[0]!, big, h.cargo.snapshots[1]!],
      forwarded: h.cargo.forwarded,
    };
    const { cargo: kept, dropped } = withoutOversized(cargo);
    expect(dropped).toEqual([
      { kind: 'snapshot', entityType: 'cart', entityId: 'huge', bytes: expect.any(Number) },
    ]);
    expect(kept.snapshots.map((s) => s.entityId)).toEqual(['cart-0', 'cart-1']);
    expect(kept.forwarded).toEqual(h.cargo.forwarded);
    // positive control: within the bound, nothing is dropped
    expect(withoutOversized(cargo, Number.POSITIVE_INFINITY).dropped).toEqual([]);
  });
});
