import type { CargoMessage, CargoSnapshot, HandOffCargo } from './keeper-host.js';
import type { HandOff, HandOffPart } from './keeper-messages.js';

/**
 * A hand-off's cargo (snapshots + held messages) can be far larger than the system lane's frame
 * limit (512 KiB). The sender cuts it into parts of a bounded encoded size, sent in order on one
 * connection; the receiver joins them back into the hand-off they came from. A connection reset
 * drops parts in flight: the receiver sees a gap (or a new first part) and discards the partial
 * cargo; the sender's probe then finds the token missing and sends it all again. Nothing here
 * drops silently: an entry too large for any frame is returned to the caller to log and count.
 *
 * Pure functions (the decisions join, the machine cuts).
 */

/** Default encoded bytes per part: well under the 512 KiB system frame limit. */
export const HAND_OFF_PART_BYTES = 128 * 1024;
/**
 * One entry (a snapshot or a held message) larger than this cannot travel: the wire encodes up to
 * ~2.25x the JSON size (float64 numbers), and 200 KiB x 2.25 stays under the 512 KiB frame limit.
 */
export const MAX_CARGO_ENTRY_BYTES = 200 * 1024;

/** UTF-8 bytes of an entry's JSON: the size estimate (refs serialise as their address). */
export function entryBytes(entry: CargoSnapshot | CargoMessage): number {
  try {
    return Buffer.byteLength(JSON.stringify(entry) ?? '', 'utf8');
  } catch {
    return Number.POSITIVE_INFINITY; // a cycle or a BigInt: it cannot travel anyway
  }
}

export interface OversizedEntry {
  readonly kind: 'snapshot' | 'message';
  readonly entityType: string;
  readonly entityId: string;
  readonly bytes: number;
}

/** The cargo without the entries that cannot travel in any frame, and which those were. */
export function withoutOversized(
  cargo: HandOffCargo,
  maxEntryBytes = MAX_CARGO_ENTRY_BYTES,
): { cargo: HandOffCargo; dropped: OversizedEntry[] } {
  const dropped: OversizedEntry[] = [];
  const keep = <T extends CargoSnapshot | CargoMessage>(list: readonly T[], kind: OversizedEntry['kind']) =>
    list.filter((e) => {
      const bytes = entryBytes(e);
      if (bytes <= maxEntryBytes) return true;
      dropped.push({ kind, entityType: e.entityType, entityId: e.entityId, bytes });
      return false;
    });
  const snapshots = keep(cargo.snapshots, 'snapshot');
  const forwarded = keep(cargo.forwarded, 'message');
  return dropped.length === 0 ? { cargo, dropped } : { cargo: { snapshots, forwarded }, dropped };
}

/**
 * The hand-off as it goes on the wire: itself when its cargo fits in one part, else parts in order
 * (snapshots first, then messages, each list's order kept), each at most `partBytes` (estimated)
 * or one entry.
 */
export function splitHandOff(
  h: HandOff,
  partBytes = HAND_OFF_PART_BYTES,
): readonly (HandOff | HandOffPart)[] {
  const chunks: { snapshots: CargoSnapshot[]; forwarded: CargoMessage[] }[] = [];
  let current = { snapshots: [] as CargoSnapshot[], forwarded: [] as CargoMessage[] };
  let bytes = 0;
  const add = (size: number, put: () => void) => {
    if (bytes > 0 && bytes + size > partBytes) {
      chunks.push(current);
      current = { snapshots: [], forwarded: [] };
      bytes = 0;
    }
    put();
    bytes += size;
  };
  for (const s of h.cargo.snapshots) add(entryBytes(s), () => current.snapshots.push(s));
  for (const m of h.cargo.forwarded) add(entryBytes(m), () => current.forwarded.push(m));
  chunks.push(current);
  if (chunks.length === 1) return [h];
  return chunks.map((cargo, index) => ({
    type: 'sharding.hand-off-part',
    from: h.from,
    partition: h.partition,
    stamp: h.stamp,
    version: h.version,
    index,
    total: chunks.length,
    cargo,
  }));
}

/** A hand-off being joined: the parts so far, in order. */
export interface Assembly {
  readonly stamp: HandOff['stamp'];
  readonly version: number;
  readonly total: number;
  readonly chunks: readonly HandOffCargo[];
  readonly entries: number;
}

export type JoinResult =
  | { readonly kind: 'partial'; readonly assembly: Assembly }
  | { readonly kind: 'complete'; readonly handOff: HandOff }
  /** Out of order (a part lost in a reset), inconsistent, or over the bound: what was joined is discarded. */
  | { readonly kind: 'discarded'; readonly why: string };

const sameStamp = (a: HandOff['stamp'], b: HandOff['stamp']) =>
  a.version === b.version && a.round === b.round && a.seq === b.seq;

/** Adds one part to the assembly of its (sender, partition). `maxEntries` bounds a cargo's memory. */
export function joinPart(assembly: Assembly | undefined, part: HandOffPart, maxEntries: number): JoinResult {
  const size = part.cargo.snapshots.length + part.cargo.forwarded.length;
  let next: Assembly;
  if (part.index === 0) {
    next = {
      stamp: part.stamp,
      version: part.version,
      total: part.total,
      chunks: [part.cargo],
      entries: size,
    };
  } else {
    if (assembly === undefined) return { kind: 'discarded', why: 'a part without its first' };
    if (
      !sameStamp(assembly.stamp, part.stamp) ||
      assembly.version !== part.version ||
      assembly.total !== part.total
    )
      return { kind: 'discarded', why: 'a part of another hand-off' };
    if (part.index !== assembly.chunks.length)
      return { kind: 'discarded', why: 'a part missing (out of order)' };
    next = { ...assembly, chunks: [...assembly.chunks, part.cargo], entries: assembly.entries + size };
  }
  if (next.entries > maxEntries) return { kind: 'discarded', why: 'cargo over the entry bound' };
  if (part.index >= part.total) return { kind: 'discarded', why: 'a part beyond its total' };
  if (next.chunks.length < next.total) return { kind: 'partial', assembly: next };
  return {
    kind: 'complete',
    handOff: {
      type: 'sharding.hand-off',
      from: part.from,
      partition: part.partition,
      stamp: part.stamp,
      version: part.version,
      cargo: {
        snapshots: next.chunks.flatMap((c) => c.snapshots),
        forwarded: next.chunks.flatMap((c) => c.forwarded),
      },
    },
  };
}
