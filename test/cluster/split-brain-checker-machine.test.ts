import { describe, expect, it } from 'vitest';
import { type AnyStateMachine, createActor, SimulatedClock } from 'xstate';
import { getShortestPaths, getSimplePaths } from 'xstate/graph';
import {
  type ClusterConfig,
  createSplitBrainCheckerMachine,
  type SbcView,
  type SplitBrainCheckerEvent,
} from '../../packages/cluster/src/index.js';
import {
  type CheckerContext,
  type CheckerEffect,
  isOwnFinding,
  shouldMergeInto,
} from '../../packages/cluster/src/split-brain-checker/split-brain-checker-decisions.js';
import {
  type ActorRef,
  type ActorSystem,
  formatNodeAddress,
  type NodeAddress,
  nodeKey,
  type UniqueNodeAddress,
} from '../../packages/core/src/index.js';
import { delayedEvent, stateName } from '../support/machine-paths.js';

/**
 * The split-brain checker alone: events in, effects out. It merges whole clusters (every member
 * of the side restarts and joins the other), so its safety rule is checked on every path
 * xstate/graph finds through its states: it starts a merge only on a reply to its own latest
 * probing round (from an address that round asked, naming a coordinator that round asked or one
 * of our seeds), only as the coordinator, only when its side is the one that joins (smaller, or
 * equal with the higher coordinator address), at most once; a member follows a merge order only
 * from its own coordinator. Positive controls: mutants of the merge rule are caught.
 */

const node = (i: number): UniqueNodeAddress => ({ host: `10.0.0.${i}`, port: 2552, uid: `u${i}` });
const address = (n: NodeAddress) => formatNodeAddress(n);
const A = node(1); // a failed member with a lower address than ours (a tie goes its way)
const SELF = node(2);
const M = node(3); // the other member of our side
const B = node(6); // a failed member with a higher address than ours (a tie goes our way)
const SEED = node(7); // our seed: a cluster found there is ours to find
const X = node(9); // a stranger: neither probed nor a seed
const SEEDS: NodeAddress[] = [{ host: SEED.host, port: SEED.port }];
const OUR_ADDRESSES = [address(SELF), address(M)];

const refTo = (n: UniqueNodeAddress, path: string): ActorRef =>
  ({
    id: `${nodeKey(n)}${path}`,
    address: { cluster: 't', node: n, path },
    send() {},
  }) as unknown as ActorRef;

const system = {
  node: SELF,
  logger: { info() {}, warn() {}, debug() {}, error() {} },
  remoteRef: refTo,
  anyIncarnationRef: (n: NodeAddress, path: string) => refTo({ ...n, uid: '*' }, path),
  clock: { setTimeout: () => undefined },
} as unknown as ActorSystem;

function machine(): AnyStateMachine {
  return createSplitBrainCheckerMachine({
    system,
    config: { downing: 'auto', seeds: SEEDS } as unknown as ClusterConfig,
    selfAddress: address(SELF),
    probeIntervalMs: 100,
    rejoin: () => {},
  }) as unknown as AnyStateMachine;
}

const failed = (...ns: UniqueNodeAddress[]) => ns.map((n) => ({ host: n.host, port: n.port }));
const view = (isCoordinator: boolean, size: number, failedOnes: NodeAddress[]): SbcView => ({
  type: 'sbc.view',
  isCoordinator,
  coordinator: isCoordinator ? SELF : A,
  coordinatorKey: nodeKey(isCoordinator ? SELF : A),
  size,
  failed: failedOnes,
  memberAddresses: OUR_ADDRESSES,
});
const reply = (from: UniqueNodeAddress, coordinator: UniqueNodeAddress, size: number) =>
  ({ type: 'sbc.probe-reply', from, coordinator, size }) as const;

// the views this node goes through: coordinator of two with A and B failed, with only B failed,
// with nobody failed, coordinator of five, and a plain member (A coordinates)
const VIEWS = [
  view(true, 2, failed(A, B)),
  view(true, 2, failed(B)),
  view(true, 2, []),
  view(true, 5, failed(A, B)),
  view(false, 2, failed(B)),
];
const EVENTS = [
  ...VIEWS,
  reply(A, A, 3), // A coordinates three: we (two) join it
  reply(A, A, 2), // a tie: A's address is lower, so we join
  reply(B, B, 2), // a tie: our address is lower, so we stay
  reply(B, B, 1), // B is smaller: it joins us
  reply(B, SEED, 4), // a probed address naming our seed's cluster
  reply(B, X, 9), // a probed address naming a stranger
  reply(X, X, 9), // unsolicited
  { type: 'sbc.probe', coordinator: X, size: 1, replyTo: refTo(X, '/system/split-brain-checker') },
  { type: 'sbc.probe', coordinator: M, size: 2, replyTo: refTo(M, '/system/split-brain-checker') },
  { type: 'sbc.merge', from: nodeKey(A), target: { host: X.host, port: X.port } }, // our coordinator's order (as a member)
  { type: 'sbc.merge', from: nodeKey(X), target: { host: X.host, port: X.port } }, // a stranger's
  delayedEvent<SplitBrainCheckerEvent>('probeInterval', 'splitBrainChecker.probing'),
] as unknown as SplitBrainCheckerEvent[];

/** Replays events on a live actor, recording every effect its action `run` gets with the event that caused it. */
function replay(logic: AnyStateMachine, events: readonly SplitBrainCheckerEvent[]) {
  const effects: { effect: CheckerEffect; at: number }[] = [];
  let at = -1;
  const live = logic.provide({
    actions: { run: (_: unknown, effect: CheckerEffect) => void effects.push({ effect, at }) },
  } as never) as AnyStateMachine;
  const actor = createActor(live, { clock: new SimulatedClock() });
  actor.start();
  for (const [i, event] of events.entries()) {
    at = i;
    actor.send(event);
  }
  return { actor, effects };
}

/** The tie rule written out again, independently: the side whose coordinator has the lower address stays. */
const lowerAddress = (a: UniqueNodeAddress, b: UniqueNodeAddress) =>
  Number(a.host.split('.')[3]) < Number(b.host.split('.')[3]);

/** Every way the run of `events` breaks the checker's safety rule. */
function violationsOf(logic: AnyStateMachine, events: readonly SplitBrainCheckerEvent[]): string[] {
  const { effects } = replay(logic, events);
  const found: string[] = [];
  let lastView: SbcView | undefined;
  let lastRound: readonly string[] | undefined;
  let merges = 0;
  let e = 0;
  for (const [i, event] of events.entries()) {
    if (event.type === 'sbc.view') lastView = event;
    for (; e < effects.length && effects[e]!.at === i; e++) {
      const { effect } = effects[e]!;
      if (merges > 0 && effect.kind !== 'log' && effect.kind !== 'rejoin' && effect.kind !== 'order-merge')
        found.push(`${effect.kind} after the merge began`);
      if (effect.kind === 'probe') {
        lastRound = effect.targets.map(address);
        if (!lastView?.isCoordinator) found.push('probed while not the coordinator');
      }
      if (effect.kind === 'order-merge') {
        merges++;
        if (event.type !== 'sbc.probe-reply') {
          found.push(`ordered a merge on ${event.type}`);
          continue;
        }
        if (!lastView?.isCoordinator) found.push('ordered a merge while not the coordinator');
        if (lastRound === undefined || !lastRound.includes(address(event.from)))
          found.push('merged on a reply that does not answer its latest probe');
        const target = address(event.coordinator);
        if (!(lastRound ?? []).includes(target) && !SEEDS.some((s) => address(s) === target))
          found.push('merged into a coordinator it neither probed nor has for a seed');
        const size = lastView?.size ?? 0;
        const smaller = size < event.size || (size === event.size && lowerAddress(event.coordinator, SELF));
        if (!smaller) found.push(`merged as the side that stays (${size} into ${event.size})`);
        if (address(effect.merge.target) !== target) found.push('ordered a merge into another target');
        if ([...effect.to.map(address)].sort().join() !== [address(M)].join())
          found.push('did not order every other member of its side');
      }
      if (effect.kind === 'rejoin') {
        if (effect.graceMs === undefined) {
          // a member following an order
          if (event.type !== 'sbc.merge' || event.from !== lastView?.coordinatorKey)
            found.push('rejoined on an order that is not from its coordinator');
        } else if (event.type !== 'sbc.probe-reply') found.push('initiator rejoined without a reply');
        if (effects.filter((x) => x.effect.kind === 'rejoin').length > 1) found.push('rejoined twice');
      }
    }
  }
  if (merges > 1) found.push('ordered two merges');
  return [...new Set(found)];
}

const serializeState = (s: { value: unknown; context: CheckerContext }) =>
  JSON.stringify({
    v: s.value,
    view: s.context.view && VIEWS.indexOf(s.context.view),
    m: s.context.merging,
    p: s.context.probed,
  });
const eventsOf = (path: { steps: readonly { event: { type: string } }[] }) =>
  path.steps
    .map((s) => s.event)
    .filter((ev) => !ev.type.startsWith('xstate.init')) as SplitBrainCheckerEvent[];

function pathsOf(logic: AnyStateMachine) {
  const quiet = logic.provide({ actions: { run: () => {} } } as never) as AnyStateMachine;
  const shortest = getShortestPaths(quiet, { events: EVENTS, serializeState: serializeState as never });
  // simple paths over the events that make and break a merge (views, probing rounds, replies)
  const simple = getSimplePaths(quiet, {
    events: [
      VIEWS[0]!,
      VIEWS[1]!,
      VIEWS[4]!,
      ...EVENTS.slice(VIEWS.length, VIEWS.length + 3),
      EVENTS.at(-1)!,
    ],
    serializeState: serializeState as never,
  });
  return [...shortest, ...simple].map(eventsOf);
}

const violations = (logic: AnyStateMachine) =>
  pathsOf(logic).flatMap((events) =>
    violationsOf(logic, events).map((v) => `${v}: ${events.map((x) => x.type)}`),
  );

describe('split-brain checker machine, alone', () => {
  const paths = pathsOf(machine());

  it('the walks reach every state and a merge both as initiator and as member', () => {
    const reached = new Set<string>();
    let initiated = 0;
    let followed = 0;
    for (const events of paths) {
      const { actor, effects } = replay(machine(), events);
      reached.add(stateName(actor.getSnapshot().value));
      if (effects.some((x) => x.effect.kind === 'order-merge')) initiated++;
      if (effects.some((x) => x.effect.kind === 'rejoin' && x.effect.graceMs === undefined)) followed++;
    }
    expect([...reached].sort()).toEqual(['idle', 'merging', 'probing']);
    expect(initiated).toBeGreaterThan(5);
    expect(followed).toBeGreaterThan(0);
    expect(paths.length).toBeGreaterThan(100);
  });

  it('on every path: merges only on a reply to its own latest probe, into a probed coordinator or a seed, only as the smaller side (the tie rule), once', () => {
    expect(violations(machine())).toEqual([]);
  });

  it('a probing round asks each failed address not ours once, and the reply of a probed address merges', () => {
    const { effects, actor } = replay(machine(), [
      VIEWS[0]!,
      EVENTS.at(-1)!,
      reply(A, A, 3) as unknown as SplitBrainCheckerEvent,
    ]);
    expect(effects.map((x) => x.effect.kind)).toEqual(['probe', 'log', 'order-merge', 'rejoin']);
    expect(effects[0]!.effect).toEqual({ kind: 'probe', targets: failed(A, B), size: 2 });
    expect(stateName(actor.getSnapshot().value)).toBe('merging');
  });

  it('the same reply before any probe, or after a round that no longer asks its sender, is not believed', () => {
    const before = replay(machine(), [VIEWS[0]!, reply(A, A, 3) as unknown as SplitBrainCheckerEvent]);
    expect(before.effects).toEqual([]);
    const later = replay(machine(), [
      VIEWS[0]!,
      EVENTS.at(-1)!,
      VIEWS[1]!,
      EVENTS.at(-1)!,
      reply(A, A, 3) as unknown as SplitBrainCheckerEvent,
    ]);
    expect(later.effects.map((x) => x.effect.kind)).toEqual(['probe', 'probe']);
  });
});

describe('positive controls: the same walks catch a checker that breaks the merge rule', () => {
  type Guard = (args: { context: CheckerContext; event: SplitBrainCheckerEvent }) => boolean;
  const mutant = (replyMerges: Guard) =>
    machine().provide({ guards: { replyMerges } } as never) as AnyStateMachine;
  const theirs = (_: CheckerContext, e: SplitBrainCheckerEvent) => {
    const r = e as ReturnType<typeof reply>;
    return { size: r.size, address: address(r.coordinator) };
  };
  /** The real guard's first condition, kept by every mutant: a coordinator with no merge under way. */
  const mayMerge = (context: CheckerContext) => !!context.view?.isCoordinator && !context.merging;

  it('believing any reply (no check that it answers our own probe) is caught', () => {
    const found = violations(
      mutant(
        ({ context, event }) =>
          mayMerge(context) &&
          shouldMergeInto({ size: context.view!.size, address: address(SELF) }, theirs(context, event)),
      ),
    );
    expect(found.some((v) => v.startsWith('merged on a reply that does not answer its latest probe'))).toBe(
      true,
    );
  });

  it('the tie rule turned round (the lower address joins) is caught', () => {
    const found = violations(
      mutant(({ context, event }) => {
        const view = context.view;
        const r = event as ReturnType<typeof reply>;
        if (!view?.isCoordinator || context.merging || !isOwnFinding(context.probed, SEEDS, r)) return false;
        const other = theirs(context, event);
        return view.size < other.size || (view.size === other.size && address(SELF) < other.address);
      }),
    );
    expect(found.some((v) => v.startsWith('merged as the side that stays (2 into 2)'))).toBe(true);
  });

  it('merging as the larger side is caught', () => {
    const found = violations(
      mutant(
        ({ context, event }) =>
          mayMerge(context) && isOwnFinding(context.probed, SEEDS, event as ReturnType<typeof reply>),
      ),
    );
    expect(found.some((v) => v.startsWith('merged as the side that stays (5 into'))).toBe(true);
  });
});
