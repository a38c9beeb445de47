import { describe, expect, it } from 'vitest';
import { createActor, SimulatedClock } from 'xstate';
import { getShortestPaths } from 'xstate/graph';
import type { ActorSystem } from '../../packages/core/src/index.js';
import type { ElectionPeer, ResolvedElectionOptions } from '../../packages/election/src/election.js';
import { DEFAULT_TIMING } from '../../packages/election/src/election.js';
import type { QuorumEffect } from '../../packages/election/src/quorum-decisions.js';
import { createQuorumMachine, type QuorumEvent } from '../../packages/election/src/quorum-machine.js';
import { delayedEvent, stateName } from '../support/machine-paths.js';

/**
 * The quorum election machine alone, on a fixed clock: events in, effects out. xstate/graph
 * enumerates the shortest path to every distinct state it can reach from a set of messages from
 * two peers; each path is replayed on a live actor and the safety rules checked on its effects.
 */

const peer = (i: number): ElectionPeer => ({
  address: `10.0.0.${i}:2552`,
  node: { host: `10.0.0.${i}`, port: 2552 },
  rank: i,
});
const [A, B, C] = [peer(1), peer(2), peer(3)];

function machine(now: { t: number }) {
  const system = {
    clock: { now: () => now.t },
    random: () => 0.5,
    logger: { info() {}, warn() {}, debug() {}, error() {} },
  } as unknown as ActorSystem;
  const options = {
    peers: [A, B, C],
    timing: DEFAULT_TIMING,
    voteStore: undefined,
    lastIndex: () => 0,
  } as unknown as ResolvedElectionOptions;
  return createQuorumMachine({ system, self: A, options, send() {}, report() {} });
}

const after = (delay: string, state: string) => delayedEvent<QuorumEvent>(delay, `quorum.${state}`);
const from = (p: ElectionPeer) => p.address;
const EVENTS: QuorumEvent[] = [
  after('electionTimeout', 'following'),
  after('electionTimeout', 'candidate.preVoting'),
  after('electionTimeout', 'candidate.voting'),
  after('heartbeatInterval', 'leading.beating'),
  { type: 'quorum.lease-check' },
  { type: 'election.quorum.pre-vote-reply', from: from(B), generation: 1, granted: true },
  { type: 'election.quorum.pre-vote-reply', from: from(B), generation: 2, granted: true },
  { type: 'election.quorum.vote', from: from(B), generation: 1, granted: true },
  { type: 'election.quorum.vote', from: from(C), generation: 2, granted: true },
  { type: 'election.quorum.vote', from: from(C), generation: 2, granted: false },
  { type: 'election.quorum.vote-request', from: from(B), generation: 1, lastIndex: 0 },
  { type: 'election.quorum.vote-request', from: from(C), generation: 1, lastIndex: 0 },
  { type: 'election.quorum.vote-request', from: from(C), generation: 2, lastIndex: 0 },
  { type: 'election.quorum.heartbeat', from: from(B), generation: 1, sentAt: 0 },
  { type: 'election.quorum.heartbeat', from: from(C), generation: 2, sentAt: 0 },
  { type: 'election.quorum.heartbeat-ack', from: from(B), generation: 1, sentAt: 0, ok: true },
  { type: 'election.quorum.heartbeat-ack', from: from(C), generation: 2, sentAt: 0, ok: true },
  { type: 'election.quorum.pre-vote', from: from(C), generation: 3, lastIndex: 0 },
];

describe('quorum election machine, alone', () => {
  // a clock past the start's loyalty window: a follower may vote from the first event on
  const now = { t: 10_000 };
  const paths = getShortestPaths(machine(now).provide({ actions: { run: () => {} } }), {
    events: EVENTS,
    serializeState: (s) =>
      JSON.stringify({
        v: s.value,
        g: s.context.generation,
        f: s.context.votedFor,
        l: s.context.leader,
        a: s.context.acting,
        n: s.context.votes.length,
      }),
  });

  it('reaches every state (path coverage from xstate/graph)', () => {
    const reached = new Set(paths.map((p) => stateName(p.state.value)));
    expect([...reached].sort()).toEqual(
      ['following', 'candidate.preVoting', 'candidate.voting', 'leading.beating'].sort(),
    );
    expect(paths.length).toBeGreaterThan(20);
  });

  it('on every path: one vote per generation, persisted before it is sent; leading only with a majority; acting only when leading', () => {
    for (const path of paths) {
      const effects: QuorumEffect[] = [];
      const actor = createActor(
        machine(now).provide({ actions: { run: (_, effect: QuorumEffect) => void effects.push(effect) } }),
        { clock: new SimulatedClock() },
      ).start();
      for (const step of path.steps) {
        if (step.event.type.startsWith('xstate.init')) continue;
        const before = effects.length;
        actor.send(step.event);
        const s = actor.getSnapshot();
        const state = stateName(s.value);
        if (
          state === 'leading.beating' &&
          step.event.type !== after('heartbeatInterval', 'leading.beating').type
        )
          expect(
            s.context.votes.filter((v) => [A, B, C].some((p) => p.address === v)).length,
          ).toBeGreaterThanOrEqual(2);
        for (const e of effects.slice(before)) {
          if (e.kind === 'report' && e.view.acting) expect(state).toBe('leading.beating');
        }
      }
      expect(stateName(actor.getSnapshot().value)).toBe(stateName(path.state.value));
      // votes: per generation one candidate, and the persisted vote precedes the grant it backs
      const votedFor = new Map<number, string>();
      const persisted = new Set<string>();
      for (const e of effects) {
        if (e.kind === 'persist' && e.votedFor !== null) {
          const before = votedFor.get(e.generation);
          expect(
            before === undefined || before === e.votedFor,
            `two votes in generation ${e.generation}`,
          ).toBe(true);
          votedFor.set(e.generation, e.votedFor);
          persisted.add(`${e.generation}:${e.votedFor}`);
        }
        if (e.kind === 'send' && e.message.type === 'election.quorum.vote' && e.message.granted)
          expect(
            persisted.has(`${e.message.generation}:${e.to}`),
            'a grant sent before its vote was persisted',
          ).toBe(true);
      }
    }
  });
});
