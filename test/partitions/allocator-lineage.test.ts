import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { DoyenNode } from '../../packages/doyen/src/index.js';
import {
  ackAhead,
  allocateFor,
  initialAllocatorContext,
  MAX_VERSION_RAISE,
  type MembersEvent,
  raiseVersion,
  takeAck,
} from '../../packages/partitions/src/service/allocator-decisions.js';
import { freePorts } from '../support/cluster-nodes.js';
import { nodesClosedAfterEach, startMemberNode } from '../support/doyen-nodes.js';
import { jsonLogCapture } from '../support/json-log.js';
import { eventually } from '../support/wait.js';
import { members } from './support.js';

/**
 * A new allocator lineage behind the cluster (found by the sharding chaos run, seed 39101): the
 * split-brain resolver downed every member that may host the allocator at once, and each came back
 * as a new incarnation; the new allocator started from no table, at v1, while the proxy-only
 * member that stayed held v18 and, fencing by version, refused every table below it for good: it
 * routed to the old incarnations for as long as the run lasted. A member now acknowledges the
 * newer version it holds, and the allocator republishes the same table numbered past it.
 */

const P = 12;
const policy = { selfKey: 'm00', options: { partitionCount: P } };
const membersEvent = (ids: number[], all: string[]): MembersEvent => ({
  type: 'allocator.members',
  members: members(ids),
  all,
  version: 3,
  known: undefined,
});

describe('allocator decisions: a member ahead of the lineage', () => {
  const fresh = () =>
    allocateFor(policy, initialAllocatorContext(undefined), membersEvent([0, 1], ['m00', 'm01', 'm02']))
      .context;

  it('an ack of a newer version: the same table, numbered past it, adopted and published to every other member', () => {
    const ctx = fresh();
    expect(ctx.table!.version).toBe(1);
    const ack = { type: 'partitions.ack' as const, version: 18, from: 'm02' };
    expect(ackAhead(ctx, ack)).toBe(true);
    const step = raiseVersion(policy, ctx, ack);
    const table = step.context.table!;
    expect(table).toEqual({ ...ctx.table!, version: 19 });
    expect(step.context.waiting).toEqual(['m01', 'm02']);
    expect(step.effects).toEqual([
      { kind: 'adopt', table },
      expect.objectContaining({
        kind: 'log',
        level: 'warn',
        event: 'partitions.version-raised',
        fields: { member: 'm02', theirs: 18, ours: 1, version: 19 },
      }),
      { kind: 'publish', to: ['m01', 'm02'], table, membershipVersion: 3 },
    ]);
  });

  it('positive control: an ack of the allocator’s own version (or an older one) only ends the wait', () => {
    const ctx = fresh();
    for (const version of [1, 0]) {
      const ack = { type: 'partitions.ack' as const, version, from: 'm02' };
      expect(ackAhead(ctx, ack)).toBe(false);
      expect(raiseVersion(policy, ctx, ack)).toEqual({ context: ctx, effects: [] });
      expect(takeAck(ctx, ack).context.waiting).toEqual(['m01']);
    }
  });

  it('counts only a current member, and only a version near enough to be counted past', () => {
    const ctx = fresh();
    expect(ackAhead(ctx, { type: 'partitions.ack', version: 18, from: 'm09' })).toBe(false);
    expect(ackAhead(ctx, { type: 'partitions.ack', version: Number.MAX_SAFE_INTEGER, from: 'm02' })).toBe(
      false,
    );
    // a member claiming a version far past this lineage's: not followed (the versions' end is near)
    expect(ackAhead(ctx, { type: 'partitions.ack', version: 1 + MAX_VERSION_RAISE + 1, from: 'm02' })).toBe(
      false,
    );
    expect(ackAhead(ctx, { type: 'partitions.ack', version: 1 + MAX_VERSION_RAISE, from: 'm02' })).toBe(true);
    // before any table of its own there is nothing to number past
    expect(
      ackAhead(initialAllocatorContext(undefined), { type: 'partitions.ack', version: 18, from: 'm02' }),
    ).toBe(false);
  });
});

describe('a proxy-only member that outlives every member that may host the allocator', () => {
  const nodes = nodesClosedAfterEach();

  it('follows the new allocator’s table, though it started below the version the proxy held', async () => {
    const [proxyPort, hostPort, nextPort] = (await freePorts(3)) as [number, number, number];
    const config = {
      cluster: 'lineage',
      secret: randomBytes(16).toString('hex'),
      partitions: { count: 16, role: 'shard' },
    };
    const start = (port: number, roles: string[], logger?: ReturnType<typeof jsonLogCapture>['logger']) =>
      startMemberNode(port, proxyPort, { ...config, roles }, logger ? { logger } : {}, nodes);
    // the proxy first: the oldest member, but no role, so never the allocator's host
    const proxy = await start(proxyPort, []);
    const host = await start(hostPort, ['shard']);
    const ownerOfAll = (n: DoyenNode) => {
      const t = n.partitions!.table();
      return t && new Set(t.owners).size === 1 ? t.owners[0] : undefined;
    };
    await eventually(() => ownerOfAll(proxy) === host.cluster.self.key, {
      what: 'the first host owning all',
    });
    // the old lineage far ahead (the chaos run's proxy held v18 after eighteen membership changes):
    // the proxy's table renumbered as one its allocator would have published later
    const current = proxy.partitions!.table()!;
    expect(proxy.partitions!.adopt({ ...current, version: 50 })).toBe(true);
    // a graceful leave: a retiring member keeps its partitions when no other may own them
    await host.shutdown();
    nodes.splice(nodes.indexOf(host), 1);
    // (the leaving host's allocator met the proxy's v50 too, and numbered past it)
    const held = proxy.partitions!.table()!.version;
    expect(held).toBeGreaterThanOrEqual(50);
    await eventually(() => proxy.cluster.state().membership?.members.length === 1, { what: 'the host gone' });
    // a new member that may host the allocator: its allocator knows no table, so starts at v1
    const { lines, logger } = jsonLogCapture('info');
    const next = await start(nextPort, ['shard'], logger);
    await eventually(() => ownerOfAll(proxy) === next.cluster.self.key, {
      what: 'the proxy following the new host',
    });
    expect(proxy.partitions!.table()!.version).toBeGreaterThan(held);
    expect(next.partitions!.table()!.version).toBe(proxy.partitions!.table()!.version);
    // not vacuous: the new lineage did start below what the proxy held, and was raised past it
    const allocated = lines.filter((l) => l.event === 'partitions.allocated').map((l) => l.version);
    expect(allocated[0]).toBeLessThanOrEqual(held);
    expect(lines.some((l) => l.event === 'partitions.version-raised' && l.theirs === held)).toBe(true);
  }, 30_000);
});
