import { describe, expect, it } from 'vitest';
import { fromTransition, type Message } from '../../packages/core/src/index.js';
import { entityTypeOf } from '../../packages/sharding/src/entity-type.js';
import { Region } from '../../packages/sharding/src/region/region.js';
import { ShardingMetrics } from '../../packages/sharding/src/region/sharding-metrics.js';
import { makeCoreSystem } from '../support/core-system.js';

/**
 * An owner gone from the members (downed, removed: its incarnation is over) gets no messages:
 * they are held until a table names a live owner, then go there. Found by the sharding chaos run
 * (seed 39106): every member that may host the allocator was downed at once and restarted in
 * place; the proxy kept sending to the old incarnations for the seconds the next table took, and
 * what it sent was dead letters there. Positive control: while the owner is a member, messages
 * go to it at once.
 */

const PARTITIONS = 8;
const SELF = '127.0.0.1:1#u1';
const OLD = '127.0.0.1:2#old';
const NEW = '127.0.0.1:2#new';
const ID = 'c-1';

function proxy() {
  const { system, scheduler } = makeCoreSystem();
  // what leaves for which incarnation: one envelope or one batch each
  const sent: { uid: string }[] = [];
  system.attachTransport({
    send: (node) => {
      sent.push({ uid: node.uid });
    },
  });
  const region = new Region(system, new ShardingMetrics(system.metrics), {
    partitionCount: PARTITIONS,
    selfKey: SELF,
  });
  // proxy-only: routes, hosts nothing
  region.addType(
    entityTypeOf(
      'counter',
      fromTransition((n: number) => n + 1, 0),
      {},
    ),
    false,
  );
  region.adoptTable({ version: 1, owners: Array.from({ length: PARTITIONS }, () => OLD) });
  const send = (n: number) => region.send('counter', ID, { type: 'count.add', n } as Message, undefined);
  /** Envelopes and batches sent toward an incarnation so far. */
  const sentTo = async (key: string) => {
    scheduler.runAll();
    // batches leave at the end of the task (a microtask)
    await new Promise((resolve) => setImmediate(resolve));
    const uid = key.split('#')[1];
    return sent.filter((s) => s.uid === uid).length;
  };
  return { region, send, sentTo, scheduler };
}

describe('messages for an owner gone from the members', () => {
  it('are held, not sent to the gone incarnation, and go to the next table’s owner', async () => {
    const t = proxy();
    t.region.membersNow(new Set([SELF, OLD]));
    t.send(1);
    expect(await t.sentTo(OLD)).toBe(1);
    // the owner downed and removed (restarting in place as a new incarnation)
    t.region.membersNow(new Set([SELF, NEW]));
    t.send(2);
    t.send(3);
    expect(await t.sentTo(OLD)).toBe(1);
    expect(t.region.bufferedCount()).toBe(2);
    // the next table names the new incarnation: what was held goes there, in one batch
    t.region.adoptTable({ version: 2, owners: Array.from({ length: PARTITIONS }, () => NEW) });
    expect(t.region.bufferedCount()).toBe(0);
    expect(await t.sentTo(NEW)).toBeGreaterThanOrEqual(1);
    expect(await t.sentTo(OLD)).toBe(1);
  });

  it('positive control: while the owner is a member (unreachable or not), messages go to it at once', async () => {
    const t = proxy();
    t.region.membersNow(new Set([SELF, OLD]));
    t.send(1);
    t.send(2);
    expect(t.region.bufferedCount()).toBe(0);
    expect(await t.sentTo(OLD)).toBeGreaterThanOrEqual(1);
  });

  it('a view that lagged the table: the owner back among the members gets what was held', async () => {
    const t = proxy();
    t.region.membersNow(new Set([SELF]));
    t.send(1);
    expect(t.region.bufferedCount()).toBe(1);
    t.region.membersNow(new Set([SELF, OLD]));
    expect(t.region.bufferedCount()).toBe(0);
    expect(await t.sentTo(OLD)).toBe(1);
  });

  it('before any view nothing counts as gone', async () => {
    const t = proxy();
    t.send(1);
    expect(t.region.bufferedCount()).toBe(0);
    expect(await t.sentTo(OLD)).toBe(1);
  });
});
