import { describe, expect, it } from 'vitest';
import { initialTransition, transition } from 'xstate';
import type { PartitionTable } from '../../packages/partitions/src/index.js';
import {
  allAcked,
  allocateFor,
  initialAllocatorContext,
  type MembersEvent,
  membersChanged,
  resendToMissing,
  takeAck,
} from '../../packages/partitions/src/service/allocator-decisions.js';
import { ioRecordingAllocator, members } from './support.js';

/**
 * The allocator's decisions alone: the next context and the effects as data, in the order the
 * machine's `run` carries them out (adopt here, log, publish to the others); and the machine's
 * transitions do no I/O of their own.
 */

const P = 12;
const policy = { selfKey: 'm00', options: { partitionCount: P } };
const event = (ids: number[], all: string[], version: number, known?: PartitionTable): MembersEvent => ({
  type: 'allocator.members',
  members: members(ids),
  all,
  version,
  known,
});

describe('allocator decisions', () => {
  it('new up members: the table adopted here, logged, published to every other live member, whose acks are awaited', () => {
    const step = allocateFor(
      policy,
      initialAllocatorContext(undefined),
      event([0, 1], ['m00', 'm01', 'm02'], 7),
    );
    const table = step.context.table!;
    expect(table.version).toBe(1);
    expect(step.context).toEqual({
      table,
      membershipVersion: 7,
      memberKeys: ['m00', 'm01'],
      waiting: ['m01', 'm02'],
      members: members([0, 1]),
      all: ['m00', 'm01', 'm02'],
      retiring: [],
    });
    expect(step.effects).toEqual([
      { kind: 'adopt', table },
      {
        kind: 'log',
        level: 'info',
        event: 'partitions.allocated',
        fields: { version: 1, members: 2, moved: P },
        msg: `allocated ${P} partitions over 2 members (${P} moved)`,
      },
      { kind: 'publish', to: ['m01', 'm02'], table, membershipVersion: 7 },
    ]);
  });

  it('continues from its own last table, else from the one the node knew when the members changed', () => {
    const known = allocateFor(policy, initialAllocatorContext(undefined), event([0, 1], ['m00', 'm01'], 1))
      .context.table!;
    const fromKnown = allocateFor(
      policy,
      initialAllocatorContext(undefined),
      event([0, 1, 2], ['m00'], 2, known),
    );
    expect(fromKnown.context.table!.version).toBe(known.version + 1);
    const own = fromKnown.context;
    const next = allocateFor(policy, own, event([0, 1], ['m00'], 3, known));
    expect(next.context.table!.version).toBe(own.table!.version + 1);
  });

  it('allocates only when the set of up members changed, in any order', () => {
    const ctx = allocateFor(
      policy,
      initialAllocatorContext(undefined),
      event([0, 1], ['m00', 'm01'], 1),
    ).context;
    expect(membersChanged(ctx, { ...event([1, 0], ['m00', 'm01'], 2) })).toBe(false);
    expect(membersChanged(ctx, event([0, 1, 2], ['m00'], 2))).toBe(true);
    expect(membersChanged(ctx, event([0], ['m00'], 2))).toBe(true);
    expect(membersChanged(initialAllocatorContext(undefined), event([], [], 1))).toBe(false);
  });

  it('acks end the wait for their sender; on time-out the table goes again to those missing', () => {
    let ctx = allocateFor(
      policy,
      initialAllocatorContext(undefined),
      event([0, 1], ['m00', 'm01', 'm02'], 4),
    ).context;
    ctx = takeAck(ctx, { type: 'partitions.ack', version: 1, from: 'm01' }).context;
    expect(ctx.waiting).toEqual(['m02']);
    expect(allAcked(ctx)).toBe(false);
    const resend = resendToMissing(ctx);
    expect(resend.context).toBe(ctx);
    expect(resend.effects.map((e) => e.kind)).toEqual(['log', 'publish']);
    expect(resend.effects[0]).toMatchObject({
      level: 'warn',
      event: 'partitions.ack-timeout',
      fields: { missing: ['m02'] },
    });
    expect(resend.effects[1]).toEqual({
      kind: 'publish',
      to: ['m02'],
      table: ctx.table,
      membershipVersion: 4,
    });
    expect(allAcked(takeAck(ctx, { type: 'partitions.ack', version: 1, from: 'm02' }).context)).toBe(true);
    // nothing computed yet: only the warning
    expect(resendToMissing(initialAllocatorContext(undefined)).effects.map((e) => e.kind)).toEqual(['log']);
  });
});

describe('allocator machine', () => {
  it('computing a transition does no I/O: no adopt, no log, no send until the actions run', () => {
    const { io, logic } = ioRecordingAllocator(P);
    const [start] = initialTransition(logic);
    // real member keys: the allocator sends to the nodes they name
    const k = (i: number) => `10.0.0.${i}:2552#u${i}`;
    const [next, actions] = transition(logic, start, {
      type: 'allocator.members',
      members: [1, 2].map((i) => ({ key: k(i), roles: [] })),
      all: [k(1), k(2)],
      version: 1,
      known: undefined,
    });
    expect(next.value).toBe('publishing');
    expect(io).toEqual([]);
    const runs = actions.filter((a) => a.type === 'run');
    expect(runs.map((a) => (a.params as { kind: string }).kind)).toEqual(['adopt', 'log', 'publish']);
  });
});
