import { describe, expect, it } from 'vitest';
import { initialTransition, transition } from 'xstate';
import { MessageTypes } from '../../packages/core/src/index.js';
import {
  ALLOCATOR_SINGLETON,
  allocatorLogic,
  PartitionService,
  type PartitionTable,
  Retirement,
  retiredIn,
} from '../../packages/partitions/src/index.js';
import {
  type AllocatorContext,
  type AllocatorPolicy,
  allocateFor,
  initialAllocatorContext,
  type MembersEvent,
  retire,
  retireNew,
} from '../../packages/partitions/src/service/allocator-decisions.js';
import { registerAllocatorMessages } from '../../packages/partitions/src/service/allocator-messages.js';
import { ClusterSingletons } from '../../packages/singleton/src/index.js';
import { SimCluster } from '../support/sim-cluster.js';
import { ioRecordingAllocator, members, ownerCounts } from './support.js';

/**
 * RETIRE (issue 29, planned moves lose nothing): a node about to leave asks, while still up, for
 * a table in which it owns nothing, so its partitions move off it in planned hand-offs before its
 * membership (and owner lease) ends. These are the allocator's decisions for it, the machine's
 * wiring, the boundary rule (a member retires only itself) and the request's re-sending on the
 * simulated network.
 */

const P = 12;
const policy: AllocatorPolicy = { selfKey: 'm00', options: { partitionCount: P, backupCount: 1 } };
const membersEvent = (ids: number[], version: number, roles: readonly string[] = []): MembersEvent => ({
  type: 'allocator.members',
  members: members(ids, roles),
  all: members(ids).map((m) => m.key),
  version,
  known: undefined,
});
const retireFrom = (from: string) => ({ type: 'partitions.retire' as const, from });
const names = (table: PartitionTable, key: string) =>
  table.owners.includes(key) || table.backups.some((b) => b.includes(key));

/** Three up members m00..m02 with a table over all of them. */
function threeMembers(p: AllocatorPolicy = policy): AllocatorContext {
  return allocateFor(p, initialAllocatorContext(undefined), membersEvent([0, 1, 2], 3)).context;
}

describe('allocator decisions: retire', () => {
  it('a retiring member owns and backs up nothing in the next table; only its partitions move; everyone learns it', () => {
    const ctx = threeMembers();
    const before = ctx.table!;
    // positive control: the table over these members gives m02 partitions and backups
    expect(names(before, 'm02')).toBe(true);
    expect(retireNew(ctx, retireFrom('m02'))).toBe(true);
    const step = retire(policy, ctx, retireFrom('m02'));
    const after = step.context.table!;
    expect(after.version).toBe(before.version + 1);
    expect(retiredIn(after, 'm02')).toBe(true);
    expect(ownerCounts(after, ['m00', 'm01'])).toEqual([6, 6]);
    // minimal movement: the partitions m00 and m01 owned stay where they were
    for (let p = 0; p < P; p++)
      if (before.owners[p] !== 'm02') expect(after.owners[p]).toBe(before.owners[p]);
    expect(step.context.retiring).toEqual(['m02']);
    expect(step.context.waiting).toEqual(['m01', 'm02']);
    expect(step.effects.map((e) => e.kind)).toEqual(['log', 'adopt', 'log', 'publish']);
    expect(step.effects[0]).toMatchObject({
      event: 'partitions.retiring',
      fields: { member: 'm02', kept: false },
    });
    // the retiring member is still up and live: it is sent the table that moves its partitions
    expect(step.effects[3]).toMatchObject({ kind: 'publish', to: ['m01', 'm02'], membershipVersion: 3 });
  });

  it('positive control: without the retire, a membership change keeps the member owning partitions', () => {
    const ctx = threeMembers();
    const next = allocateFor(policy, ctx, membersEvent([0, 1, 2, 3], 4)).context.table!;
    expect(names(next, 'm02')).toBe(true);
  });

  it('stays retired across later membership changes while up, and is pruned once no longer up', () => {
    const retired = retire(policy, threeMembers(), retireFrom('m02')).context;
    // m03 joins: m02 still owns nothing
    const joined = allocateFor(policy, retired, membersEvent([0, 1, 2, 3], 4)).context;
    expect(retiredIn(joined.table!, 'm02')).toBe(true);
    expect(joined.retiring).toEqual(['m02']);
    // m02 leaves (no longer up): dropped from the set
    const left = allocateFor(policy, joined, membersEvent([0, 1, 3], 5)).context;
    expect(left.retiring).toEqual([]);
    expect(retiredIn(left.table!, 'm02')).toBe(true);
  });

  it('only an up member may retire, and only once: a stranger or a repeat changes nothing', () => {
    const ctx = threeMembers();
    expect(retireNew(ctx, retireFrom('m09'))).toBe(false);
    expect(retire(policy, ctx, retireFrom('m09'))).toEqual({ context: ctx, effects: [] });
    const retired = retire(policy, ctx, retireFrom('m02')).context;
    expect(retireNew(retired, retireFrom('m02'))).toBe(false);
    expect(retire(policy, retired, retireFrom('m02'))).toEqual({ context: retired, effects: [] });
    // before any membership: nothing to compute
    expect(retireNew(initialAllocatorContext(undefined), retireFrom('m00'))).toBe(false);
  });

  it('the last member that may own partitions keeps them (no one to hand them to), and gives them to the next joiner', () => {
    const withRole: AllocatorPolicy = { selfKey: 'm00', options: { partitionCount: P, role: 'shard' } };
    // m00 has the role, m01 does not: m00 is the last eligible member
    const ctx = allocateFor(withRole, initialAllocatorContext(undefined), {
      ...membersEvent([0], 1, ['shard']),
      members: [...members([0], ['shard']), ...members([1])],
      all: ['m00', 'm01'],
    }).context;
    const step = retire(withRole, ctx, retireFrom('m00'));
    expect(step.context.table!.owners.every((o) => o === 'm00')).toBe(true);
    expect(step.effects[0]).toMatchObject({ event: 'partitions.retiring', fields: { kept: true } });
    // a member with the role joins: the retiring one hands everything to it
    const joined = allocateFor(withRole, step.context, {
      ...membersEvent([0], 2, ['shard']),
      members: [...members([0], ['shard']), ...members([1]), ...members([2], ['shard'])],
      all: ['m00', 'm01', 'm02'],
    }).context;
    expect(joined.table!.owners.every((o) => o === 'm02')).toBe(true);
  });

  it('the machine goes publishing on a new retire and does no I/O while computing it', () => {
    const { io, logic } = ioRecordingAllocator(P);
    const k = (i: number) => `10.0.0.${i}:2552#u${i}`;
    const [start] = initialTransition(logic);
    const [published] = transition(logic, start, {
      type: 'allocator.members',
      members: [1, 2].map((i) => ({ key: k(i), roles: [] })),
      all: [k(1), k(2)],
      version: 1,
      known: undefined,
    });
    const stable = { ...published, value: 'stable' } as typeof published;
    const [next, actions] = transition(logic, stable, { type: 'partitions.retire', from: k(2) });
    expect(next.value).toBe('publishing');
    expect(next.context.retiring).toEqual([k(2)]);
    expect(io).toEqual([]);
    expect(actions.filter((a) => a.type === 'run').map((a) => (a.params as { kind: string }).kind)).toEqual([
      'log',
      'adopt',
      'log',
      'publish',
    ]);
    // a repeat is refused by the guard: no transition, no effects
    const [again, none] = transition(logic, next, { type: 'partitions.retire', from: k(2) });
    expect(again.context).toBe(next.context);
    expect(none.filter((a) => a.type === 'run')).toEqual([]);
  });
});

describe('partitions.retire at the boundary', () => {
  it('speaks for its sender: a member retiring another is refused as forged', () => {
    const types = new MessageTypes();
    registerAllocatorMessages(types);
    expect(types.authorityOf('partitions.retire')).toBe('member');
    const origin = { host: '10.0.0.1', port: 2552, uid: 'u1' };
    const own = { type: 'partitions.retire', from: '10.0.0.1:2552#u1' };
    const other = { type: 'partitions.retire', from: '10.0.0.2:2552#u2' };
    expect(types.parse(own, origin)).toEqual({ ok: true, message: own });
    expect(types.parse(other, origin)).toMatchObject({
      ok: false,
      reason: 'forged',
      claimed: '10.0.0.2:2552#u2',
    });
    // not a member key at all: invalid
    const stranger = { type: 'partitions.retire', from: 'nobody' };
    expect(types.parse(stranger, origin)).toMatchObject({
      ok: false,
      reason: 'invalid-message',
    });
  });
});

describe('Retirement on the simulated network', () => {
  const N = 271;

  function withAllocator(c: SimCluster) {
    const services = new Map<string, PartitionService>();
    for (const [name, node] of c.nodes) {
      const service = new PartitionService(node.system, node.cluster, N);
      const singletons = new ClusterSingletons(node.system, node.cluster);
      singletons.register(
        ALLOCATOR_SINGLETON,
        allocatorLogic({
          system: node.system,
          cluster: node.cluster,
          service,
          options: { partitionCount: N },
          ackTimeoutMs: 2000,
        }),
      );
      services.set(name, service);
    }
    return (name: string) => services.get(name)!;
  }

  async function cluster(seed: number, nodes: string[]) {
    const c = new SimCluster({ seed, captureLogs: true });
    for (const n of nodes) {
      c.start(n);
      await c.sim.runFor(100);
    }
    await c.sim.runUntil(() => c.converged(nodes));
    const service = withAllocator(c);
    await c.sim.runUntil(
      () =>
        nodes.every(
          (n) =>
            service(n)
              .table()
              ?.owners.every((o) => o !== '') ?? false,
        ),
      { timeoutMs: 10_000 },
    );
    return { c, service };
  }

  it('a member (also the allocator host) retires while up: every node adopts a table without it', async () => {
    for (const leaver of ['cyrene', 'athens']) {
      const nodes = ['athens', 'beroea', 'cyrene'];
      const { c, service } = await cluster(401, nodes);
      const key = c.get(leaver).cluster.self.key;
      expect(retiredIn(service(leaver).table(), key)).toBe(false);
      const retirement = new Retirement(c.get(leaver).system, c.get(leaver).cluster, service(leaver), 200);
      await c.sim.runUntil(() => nodes.every((n) => retiredIn(service(n).table(), key)), {
        timeoutMs: 5000,
        description: `${leaver} retired everywhere`,
      });
      retirement.stop();
      expect(retirement.retired()).toBe(true);
      expect(c.get(leaver).cluster.state().status).toBe('up');
      expect(c.sim.logEntries('partitions.retiring').map((e) => e.member)).toEqual([key]);
    }
  });

  it('is asked again when the allocator moves: the new allocator did not know, and learns it', async () => {
    const nodes = ['athens', 'beroea', 'cyrene', 'delphi'];
    const { c, service } = await cluster(402, nodes);
    const key = c.get('delphi').cluster.self.key;
    const retirement = new Retirement(
      c.get('delphi').system,
      c.get('delphi').cluster,
      service('delphi'),
      200,
    );
    await c.sim.runUntil(() => retiredIn(service('beroea').table(), key), { timeoutMs: 5000 });
    // the allocator's host leaves: the next one computes from the members, without the retiring set
    void c.get('athens').cluster.leave();
    await c.sim.runUntil(
      () =>
        !c
          .get('beroea')
          .cluster.state()
          .membership!.members.some((m) => m.name === 'athens'),
      { timeoutMs: 10_000 },
    );
    await c.sim.runFor(3000);
    expect(retiredIn(service('beroea').table(), key)).toBe(true);
    expect(retiredIn(service('delphi').table(), key)).toBe(true);
    // two allocators were told: the first host and the one after it
    expect(c.sim.logEntries('partitions.retiring').length).toBeGreaterThanOrEqual(2);
    retirement.stop();
  });
});
