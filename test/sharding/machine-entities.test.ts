import { afterEach, describe, expect, it } from 'vitest';
import { assign, createMachine } from 'xstate';
import type { ActorRef } from '../../packages/core/src/index.js';
import {
  type CountReply,
  shardingNodesClosedAfterEach,
  startShardingCluster,
  tableOver,
} from '../support/sharding-nodes.js';
import { eventually } from '../support/wait.js';

const nodes = shardingNodesClosedAfterEach(afterEach);

type LampEvent = { type: 'cart.add' } | { type: 'cart.get'; replyTo: ActorRef } | { type: 'lamp.done' };

/** An xstate machine entity: counts, answers, and reaches a final state on `lamp.done`. */
const lamp = createMachine({
  types: {} as {
    context: { entityId: string; count: number };
    events: LampEvent;
    input: { entityId: string };
  },
  context: ({ input }) => ({ entityId: input.entityId, count: 0 }),
  initial: 'on',
  states: {
    on: {
      on: {
        'cart.add': { actions: assign({ count: ({ context }) => context.count + 1 }) },
        'cart.get': {
          actions: ({ context, event }) => {
            const reply: CountReply = {
              type: 'cart.count',
              entityId: context.entityId,
              count: context.count,
              outOfOrder: 0,
            };
            event.replyTo.send(reply);
          },
        },
        'lamp.done': { target: 'done' },
      },
    },
    done: { type: 'final' },
  },
});

describe('xstate machines as entities', () => {
  it('a machine entity gets its id as input; one that stops itself is forgotten and the next message starts it again', async () => {
    const [a, b] = await startShardingCluster(2, nodes);
    const lamps = [a!, b!].map((n) => n.sharding.register('lamp', lamp));
    const table = tableOver([a!, b!]);
    for (const n of [a!, b!]) n.partitions.adopt(table);
    const ask = (id: string) =>
      lamps[1]!.ref(id).ask<CountReply>((replyTo) => ({ type: 'cart.get', replyTo }));
    lamps[1]!.ref('l1').send({ type: 'cart.add' });
    lamps[0]!.ref('l1').send({ type: 'cart.add' });
    await eventually(async () => (await ask('l1')).count === 2);
    expect((await ask('l1')).entityId).toBe('l1');
    const owner = [a!, b!].find((n) => n.sharding.region.isRunning('lamp', 'l1'))!;
    lamps[0]!.ref('l1').send({ type: 'lamp.done' });
    await eventually(() => !owner.sharding.region.isRunning('lamp', 'l1'), {
      what: 'the final state forgotten',
    });
    expect(
      owner.node.transport.system.metrics.value('doyen_sharding_passivations_total', {
        type: 'lamp',
        reason: 'stopped',
      }),
    ).toBe(1);
    // the next message starts a fresh activation
    expect((await ask('l1')).count).toBe(0);
    expect(owner.sharding.region.isRunning('lamp', 'l1')).toBe(true);
  });
});
