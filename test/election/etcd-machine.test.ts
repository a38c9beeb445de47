import { describe, expect, it } from 'vitest';
import { type AnyStateMachine, assign, createActor, fromCallback, fromPromise, SimulatedClock } from 'xstate';
import { getShortestPaths } from 'xstate/graph';
import type { ActorSystem } from '../../packages/core/src/index.js';
import type {
  ElectionPeer,
  LeaderStore,
  ResolvedElectionOptions,
} from '../../packages/election/src/election.js';
import {
  deadlineInMs,
  type EtcdContext,
  type EtcdEffect,
  type EtcdEvent,
} from '../../packages/election/src/etcd-decisions.js';
import { createEtcdMachine, ETCD_CALLS } from '../../packages/election/src/etcd-machine.js';
import type { CampaignAnswer, KeepAliveAnswer } from '../../packages/election/src/etcd-messages.js';
import { delayedEvent, reachedStates, stateName } from '../support/machine-paths.js';

/**
 * The etcd election machine alone: the store's word in (watch changes, answers to its calls,
 * each stamped with the node's clock), effects out. xstate/graph enumerates the shortest path
 * to every distinct state reachable from a set of such events; each path is replayed on a live
 * actor and the election's safety rule checked at every step:
 *
 *   the node acts as leader only on the store's word that it holds the key (an answer naming it,
 *   at a revision no older than any it has seen, back before the lease it counts could end), for
 *   no longer than the key's TTL from the send time of the last call the store confirmed, and it
 *   stops at once on any word that the key changed, may be gone, or that it left the peers.
 *
 * The store counts the TTL from its receipt of a call, later than its send time, so a node that
 * keeps to this never acts while the store could give the key, with its term, to another: two
 * nodes cannot both act in one term. Positive controls: mutants of one decision each are caught.
 */

const peer = (i: number): ElectionPeer => ({
  address: `10.0.0.${i}:2552`,
  node: { host: `10.0.0.${i}`, port: 2552 },
  rank: i,
});
const [A, B, C] = [peer(1), peer(2), peer(3)];
const SELF = A.address;
const TTL_MS = 600;
const ACT_FOR_MS = TTL_MS - TTL_MS / 3; // one renewal short of the TTL
/** The node's clock while the paths run: every answer below comes back at this time. */
const NOW = 1000;

function machine(): AnyStateMachine {
  const system = {
    clock: { now: () => NOW },
    random: () => 0.5,
    logger: { info() {}, warn() {}, debug() {}, error() {} },
  } as unknown as ActorSystem;
  const leaderStore = { ttlMs: TTL_MS } as LeaderStore;
  const options = { peers: [A, B, C], leaderStore } as unknown as ResolvedElectionOptions;
  // the store calls never answer by themselves: their answers are events of the paths
  return createEtcdMachine({ system, self: A, options, send() {}, report() {} }).provide({
    actors: {
      watch: fromCallback(() => () => {}),
      campaign: fromPromise(() => new Promise<CampaignAnswer>(() => {})),
      keepAlive: fromPromise(() => new Promise<KeepAliveAnswer>(() => {})),
      resign: fromPromise(() => new Promise<void>(() => {})),
    },
  }) as unknown as AnyStateMachine;
}

type Event = EtcdEvent | { readonly type: string; readonly output?: unknown; readonly error?: unknown };

const done = (call: string, output: CampaignAnswer | KeepAliveAnswer): Event => ({
  type: `xstate.done.actor.${call}`,
  output,
});
const failed = (call: string): Event => ({
  type: `xstate.error.actor.${call}`,
  error: new Error('store down'),
});
const answer = (holder: string | undefined, revision: number, sentAt: number): CampaignAnswer => ({
  holder,
  revision,
  sentAt,
  answeredAt: NOW,
});
const kept = (confirmed: boolean, sentAt: number): KeepAliveAnswer => ({
  confirmed,
  sentAt,
  answeredAt: NOW,
});
const watch = (holder: string | undefined, revision: number): Event => ({
  type: 'etcd.watch',
  holder,
  revision,
});
const after = (delay: string, state: string) => delayedEvent<Event>(delay, `etcd.${state}`);

const EVENTS: Event[] = [
  watch(B.address, 3),
  watch(undefined, 4), // deleted or expired
  watch(SELF, 5),
  watch(C.address, 9),
  watch(B.address, 1), // stale news
  done(ETCD_CALLS.campaign, answer(SELF, 5, NOW - 10)), // won, in time
  done(ETCD_CALLS.campaign, answer(SELF, 6, NOW - ACT_FOR_MS - 1)), // won, but answered too late to act
  done(ETCD_CALLS.campaign, answer(SELF, 2, NOW - 5)), // ours, at a revision older than news seen
  done(ETCD_CALLS.campaign, answer(B.address, 3, NOW - 5)),
  done(ETCD_CALLS.campaign, answer(undefined, 0, NOW - 5)), // no answer
  failed(ETCD_CALLS.campaign),
  done(ETCD_CALLS.recheck, answer(SELF, 7, NOW - 5)),
  done(ETCD_CALLS.recheck, answer(C.address, 8, NOW - 5)),
  done(ETCD_CALLS.keepAlive, kept(true, NOW - 20)),
  done(ETCD_CALLS.keepAlive, kept(false, NOW - 20)),
  failed(ETCD_CALLS.keepAlive),
  failed(ETCD_CALLS.resign),
  { type: 'election.peers', peers: [B, C] },
  { type: 'election.peers', peers: [A, B, C] },
  after('retry', 'backoff'),
  after('recheck', 'following.watching'),
  after('renew', 'leading.waiting'),
  after('deadline', 'leading.waiting'),
  after('deadline', 'leading.renewing'),
];

const serializeState = (s: { value: unknown; context: EtcdContext }) =>
  JSON.stringify({
    v: s.value,
    h: s.context.holder,
    r: s.context.revision,
    s: s.context.sentAt,
    u: s.context.validUntil,
    w: s.context.won,
    p: s.context.peers.length,
  });

const pathsOf = (logic: AnyStateMachine) =>
  getShortestPaths(logic.provide({ actions: { run: () => {} } }) as AnyStateMachine, {
    events: EVENTS as never[],
    serializeState: serializeState as never,
  });

/** Which call's answer an event is, if any. */
function callOf(event: Event): string | undefined {
  const m = /^xstate\.(done|error)\.actor\.(.+)$/.exec(event.type);
  return m?.[2];
}

/**
 * Replays every path of `logic` and returns each violation of the safety rule (empty: none),
 * judged by a model of what the store said on that path, kept apart from the machine's context.
 */
function violations(logic: AnyStateMachine): string[] {
  const found: string[] = [];
  const paths = pathsOf(logic);
  for (const path of paths) {
    const events = path.steps.map((s) => s.event as Event).filter((e) => !e.type.startsWith('xstate.init'));
    const effects: EtcdEffect[] = [];
    const actor = createActor(
      logic.provide({ actions: { run: (_: unknown, effect: EtcdEffect) => void effects.push(effect) } }),
      { clock: new SimulatedClock() },
    ).start();
    const names = events.map((e) => e.type.replace('xstate.', '').replace('etcd.', ''));
    // the model: the newest revision the store has shown this node, and the send time of the
    // last call it confirmed since the node began to lead (the store's TTL runs from later)
    let newest = 0;
    let confirmedSentAt = Number.NEGATIVE_INFINITY;
    for (const [i, event] of events.entries()) {
      const where = `path ${names.slice(0, i + 1).join(' > ')}`;
      const before = actor.getSnapshot();
      const wasLeading = before.matches('leading');
      const state = stateName(before.value);
      const call = callOf(event);
      // a call's answer exists only while the call runs
      const running =
        (call === ETCD_CALLS.campaign && state === 'campaigning') ||
        (call === ETCD_CALLS.recheck && state === 'following.rechecking') ||
        (call === ETCD_CALLS.keepAlive && state === 'leading.renewing') ||
        (call === ETCD_CALLS.resign && state === 'resigning');
      const output =
        running && event.type.startsWith('xstate.done')
          ? ((event as { output?: unknown }).output as CampaignAnswer & KeepAliveAnswer)
          : undefined;
      const newestBefore = newest;
      actor.send(event as never);
      const after = actor.getSnapshot();
      const leading = after.matches('leading');
      const c = after.context as EtcdContext;

      if (event.type === 'etcd.watch') newest = Math.max(newest, (event as { revision: number }).revision);
      if (output && 'holder' in output && output.holder !== undefined)
        newest = Math.max(newest, output.revision);

      if (leading && !wasLeading) {
        // started acting: only on an answer naming us, as new as anything seen, in time
        const ok =
          output !== undefined &&
          'holder' in output &&
          output.holder === SELF &&
          output.revision >= newestBefore &&
          output.answeredAt < output.sentAt + ACT_FOR_MS;
        if (!ok) found.push(`${where}: began acting without the store's word in time`);
        else confirmedSentAt = output.sentAt;
        if (c.revision !== newest)
          found.push(`${where}: acting in term ${c.revision}, the store is at ${newest}`);
      }
      if (leading && wasLeading && output && 'confirmed' in output && output.confirmed)
        confirmedSentAt = Math.max(confirmedSentAt, output.sentAt);

      if (leading) {
        // never past the lease: act until at most the last confirmed send time + (TTL - renewal)
        if (c.validUntil > confirmedSentAt + ACT_FOR_MS)
          found.push(
            `${where}: acts until ${c.validUntil}, the lease it can count on ends at ${confirmedSentAt + ACT_FOR_MS}`,
          );
        // and the deadline that ends it is armed for then
        const scheduled = Object.values(
          (
            actor.system.getSnapshot() as {
              _scheduledEvents: Record<string, { event: Event; delay: number }>;
            }
          )._scheduledEvents,
        ).filter((s) => s.event.type.startsWith('xstate.after.deadline.etcd.leading'));
        if (scheduled.length !== 1 || scheduled[0]!.delay !== deadlineInMs(c, NOW))
          found.push(`${where}: acting without its deadline armed for ${c.validUntil}`);
      }

      // any word that the key is not ours, or that we left the peers, ends acting at once
      const contrary =
        (event.type === 'etcd.watch' &&
          (event as { revision: number }).revision > newestBefore &&
          (event as { holder?: string }).holder !== SELF) ||
        (wasLeading && call === ETCD_CALLS.keepAlive && running && !output?.confirmed) ||
        (event.type === 'election.peers' &&
          !(event as unknown as { peers: ElectionPeer[] }).peers.includes(A)) ||
        event.type.startsWith('xstate.after.deadline');
      if (contrary && leading) found.push(`${where}: still acting after ${event.type}`);

      // the view it reports agrees: acting only while leading, in the term it holds
      for (const e of effects.splice(0)) {
        if (e.kind === 'report' && e.view.acting && !(leading && e.view.term === c.revision))
          found.push(`${where}: reported acting outside leading`);
      }
    }
    if (stateName(actor.getSnapshot().value) !== stateName(path.state.value))
      found.push(`path ${names.join(' > ')}: the replay ends in another state than the traversal`);
    actor.stop();
  }
  return found;
}

/** With `implementations` swapped into the machine, some path reports a violation naming `what`. */
function expectCaught(implementations: object, what: string): void {
  const mutant = machine().provide(implementations as never) as AnyStateMachine;
  expect(violations(mutant).some((v) => v.includes(what))).toBe(true);
}

describe('etcd election machine, alone', () => {
  const paths = pathsOf(machine());

  it('reaches every state (path coverage from xstate/graph)', () => {
    expect(reachedStates(paths)).toEqual(
      [
        'idle',
        'campaigning',
        'backoff',
        'following.watching',
        'following.rechecking',
        'leading.waiting',
        'leading.renewing',
        'resigning',
      ].sort(),
    );
    expect(paths.length).toBeGreaterThan(50);
  });

  it('on every path: acts only on the store word that it holds the key, within the lease, and stops at once on contrary word', () => {
    expect(violations(machine())).toEqual([]);
  });

  it('positive control: a decision that acts on a late or stale answer is caught', () => {
    expectCaught(
      {
        guards: { won: ({ context }: { context: EtcdContext }) => context.holder === SELF },
      },
      "began acting without the store's word in time",
    );
  });

  it('positive control: a renewal counted from the answer instead of the send time is caught', () => {
    expectCaught(
      {
        actions: {
          takeRenewal: assign(({ context, event }: { context: EtcdContext; event: unknown }) => {
            const a = (event as { output: KeepAliveAnswer }).output;
            return { validUntil: Math.max(context.validUntil, a.answeredAt + ACT_FOR_MS) };
          }),
        },
      },
      'the lease it can count on ends',
    );
  });

  it('positive control: a leader that ignores the key being deleted is caught', () => {
    expectCaught(
      {
        guards: {
          newerNotMine: ({ context, event }: { context: EtcdContext; event: EtcdEvent }) =>
            event.type === 'etcd.watch' &&
            event.revision > context.revision &&
            event.holder !== undefined &&
            event.holder !== SELF,
        },
      },
      'still acting after etcd.watch',
    );
  });
});
