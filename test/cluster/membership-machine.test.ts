import { describe, expect, it } from 'vitest';
import { createActor, SimulatedClock } from 'xstate';
import { getShortestPaths } from 'xstate/graph';
import {
  addJoiner,
  createMembershipMachine,
  downMembers,
  formCluster,
  type Membership,
  type MembershipEvent,
  nodeOf,
  removeMembers,
  resolveClusterConfig,
  setStatus,
} from '../../packages/cluster/src/index.js';
import {
  type ActorRef,
  type ActorSystem,
  nodeKey,
  type UniqueNodeAddress,
} from '../../packages/core/src/index.js';
import { delayedEvent, reachedStates, stateName } from '../support/machine-paths.js';
import { key, node } from '../support/member-fixtures.js';

/**
 * The membership machine alone: this node (n2) joins through seed n1 and lives through the
 * coordinator's updates, its own leave and downing. xstate/graph enumerates the shortest path
 * to every distinct state it can reach; each is replayed on a live actor whose sends are
 * recorded, and the lifecycle rules are checked on every path.
 */

const addr = (n: number): UniqueNodeAddress => nodeOf(node(n));

const sent: { to: string; type: string }[] = [];
const refTo = (n: UniqueNodeAddress, path: string): ActorRef =>
  ({
    id: `${nodeKey(n)}${path}`,
    address: { cluster: 't', node: n, path },
    send: (m: { type: string }) => sent.push({ to: nodeKey(n), type: m.type }),
  }) as unknown as ActorRef;
const system = {
  node: addr(2),
  remoteRef: refTo,
  anyIncarnationRef: (n: { host: string; port: number }, path: string) => refTo({ ...n, uid: '*' }, path),
  lookup: () => undefined,
  logger: { info() {}, warn() {}, debug() {}, error() {} },
} as unknown as ActorSystem;

const config = resolveClusterConfig({ seeds: [{ host: '10.0.0.1', port: 2552 }] });
const self = { ...node(2), key: key(2), node: addr(2) };
const machine = () => createMembershipMachine({ system, config, self });

// the views the coordinator (n1) sends
let m = formCluster(node(1));
m = setStatus(addJoiner(m, node(2)).membership, [key(2)], 'up');
const together: Membership = m;
const selfLeaving = setStatus(together, [key(2)], 'leaving');
const selfExiting = setStatus(together, [key(2)], 'exiting');
const selfRemoved = removeMembers(selfExiting, [key(2)]);
const selfDowned = downMembers(together, [key(2)]);
const coordinatorGone = removeMembers(setStatus(together, [key(1)], 'exiting'), [key(1)]);
// n2 takes over while n3 is leaving: the new coordinator has leader actions to run
const withLeaver = setStatus(
  setStatus(addJoiner(together, node(3)).membership, [key(3)], 'up'),
  [key(3)],
  'leaving',
);
const coordinatorGoneLeaverLeft = removeMembers(setStatus(withLeaver, [key(1)], 'exiting'), [key(1)]);

const update = (membership: Membership, from = 1) =>
  ({
    type: 'membership.update',
    membership,
    replyTo: refTo(addr(from), '/system/membership'),
  }) as MembershipEvent;
const after = (delay: string, state: string) => delayedEvent<MembershipEvent>(delay, `membership.${state}`);

const EVENTS: MembershipEvent[] = [
  { type: 'membership.welcome', membership: together, from: addr(1) },
  { type: 'membership.welcome', membership: together, from: addr(3) }, // not the coordinator
  update(together),
  update(selfLeaving),
  update(selfExiting),
  update(selfRemoved),
  update(selfDowned),
  update(coordinatorGone),
  update(coordinatorGoneLeaverLeft),
  { type: 'cluster.leave' },
  { type: 'sbr.down-self', side: [] },
  after('joinTimeout', 'joining'),
  after('joinBackoff', 'backingOff'),
  after('leaveTimeout', 'leaving'),
  after('leaveTimeout', 'exiting'),
  after('leaderActionsInterval', 'up.coordinator.acting'),
];

describe('membership machine, alone', () => {
  const paths = getShortestPaths(machine(), {
    events: EVENTS,
    serializeState: (s) =>
      JSON.stringify({
        v: s.value,
        m: s.context.membership?.version,
        a: s.context.attempt,
        c: s.context.membership?.members.map((x) => `${x.name}:${x.status}`),
      }),
  });

  it('reaches every state (path coverage from xstate/graph)', () => {
    expect(reachedStates(paths)).toEqual(
      [
        'joining',
        'backingOff',
        'joinFailed',
        'up.member',
        'up.coordinator.idle',
        'up.coordinator.acting',
        'leaving.asking',
        'exiting',
        'removed',
        'down',
      ].sort(),
    );
  });

  it('on every path: up only when admitted by the coordinator, out states are final or dead ends, and a downed node never leaves "down"', () => {
    for (const path of paths) {
      sent.length = 0;
      const actor = createActor(machine(), { clock: new SimulatedClock() }).start();
      let admitted = false;
      const states: string[] = [];
      for (const step of path.steps) {
        if (step.event.type.startsWith('xstate.init')) continue;
        const e = step.event as MembershipEvent;
        if (
          (e.type === 'membership.welcome' && nodeKey(e.from) === key(1)) ||
          (e.type === 'membership.update' && e.membership.members.some((x) => nodeKey(x) === key(2)))
        )
          admitted = true;
        actor.send(e);
        states.push(stateName(actor.getSnapshot().value));
      }
      expect(states.at(-1) ?? 'joining').toBe(stateName(path.state.value));
      const upAt = states.findIndex((s) => s.startsWith('up.'));
      if (upAt >= 0) expect(admitted, `up without admission: ${states.join(' → ')}`).toBe(true);
      const downAt = states.indexOf('down');
      if (downAt >= 0) expect(new Set(states.slice(downAt))).toEqual(new Set(['down']));
      const removedAt = states.indexOf('removed');
      if (removedAt >= 0) expect(new Set(states.slice(removedAt))).toEqual(new Set(['removed']));
      // a joining node only ever talks to the seed it joins through
      for (const s of sent.filter((x) => x.type === 'membership.join')) expect(s.to).toBe(`10.0.0.1:2552#*`);
    }
  });

  it('a welcome from anyone but the coordinator is not believed', () => {
    const actor = createActor(machine(), { clock: new SimulatedClock() }).start();
    actor.send({ type: 'membership.welcome', membership: together, from: addr(3) });
    expect(stateName(actor.getSnapshot().value)).toBe('joining');
    actor.send({ type: 'membership.welcome', membership: together, from: addr(1) });
    expect(stateName(actor.getSnapshot().value)).toBe('up.member');
    actor.send(update(coordinatorGone));
    expect(stateName(actor.getSnapshot().value)).toBe('up.coordinator.idle');
  });

  it('a coordinator runs leader actions only while there is work, one interval apart', () => {
    const clock = new SimulatedClock();
    const actor = createActor(machine(), { clock }).start();
    actor.send({ type: 'membership.welcome', membership: together, from: addr(1) });
    actor.send(update(coordinatorGoneLeaverLeft));
    // n3 is leaving: the new coordinator moves it to exiting, then removes it
    expect(stateName(actor.getSnapshot().value)).toBe('up.coordinator.acting');
    const status = () =>
      actor.getSnapshot().context.membership?.members.find((x) => nodeKey(x) === key(3))?.status;
    clock.increment(config.leaderActionsIntervalMs - 1);
    expect(status()).toBe('leaving');
    clock.increment(1);
    expect(status()).toBe('exiting');
    clock.increment(config.leaderActionsIntervalMs);
    expect(status()).toBeUndefined();
    // nothing left to do: no timer runs, and time passing changes nothing
    expect(stateName(actor.getSnapshot().value)).toBe('up.coordinator.idle');
    let snapshots = 0;
    actor.subscribe(() => snapshots++);
    clock.increment(60_000);
    expect(snapshots).toBe(0);
  });
});
