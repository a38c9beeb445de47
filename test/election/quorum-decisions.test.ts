import { describe, expect, it } from 'vitest';
import {
  evaluateLease,
  onMessage,
  type QuorumContext,
  type QuorumPolicy,
  startVote,
} from '../../packages/election/src/quorum-decisions.js';

/**
 * The quorum election's rules as pure functions: an event and what the node reads (clock, log
 * index) in, the next context and the effects out, in the order they must happen.
 */

const A = '10.0.0.1:2552';
const B = '10.0.0.2:2552';
const C = '10.0.0.3:2552';
const policy: QuorumPolicy = {
  self: A,
  electionTimeoutMinMs: 1000,
  electionTimeoutMaxMs: 2000,
  leaseMs: 800,
};
const base: QuorumContext = {
  peers: [A, B, C].map((address) => ({ address, node: undefined }) as never),
  generation: 4,
  votedFor: null,
  leader: null,
  heardAt: null,
  votes: [],
  acks: {},
  acting: false,
  leaseEnd: null,
  notActingSince: null,
};
const at = (now: number, lastIndex = 0) => ({ now, lastIndex });
const voteRequest = (from: string, generation: number, lastIndex = 0) =>
  ({ type: 'election.quorum.vote-request', from, generation, lastIndex }) as const;

/** The leader, at 200, reads B's ok to the generation-5 heartbeat it says was sent at `sentAt`. */
const leaderHearsAckFromB = (leading: QuorumContext, sentAt: number) =>
  onMessage(
    policy,
    'leader',
    leading,
    { type: 'election.quorum.heartbeat-ack', from: B, generation: 5, sentAt, ok: true },
    at(200),
  );

describe('quorum decisions', () => {
  it('a vote is persisted before the reply that grants it leaves, and only one per generation', () => {
    const first = onMessage(policy, 'follower', base, voteRequest(B, 5), at(0));
    expect(first.context).toMatchObject({ generation: 5, votedFor: B });
    expect(first.effects.map((e) => e.kind)).toEqual(['persist', 'send']);
    expect(first.effects[0]).toEqual({ kind: 'persist', generation: 5, votedFor: B });
    expect(first.effects[1]).toMatchObject({
      to: B,
      message: { type: 'election.quorum.vote', granted: true },
    });
    // C asks in the same generation: refused, nothing persisted
    const second = onMessage(policy, 'follower', first.context, voteRequest(C, 5), at(0));
    expect(second.context.votedFor).toBe(B);
    expect(second.effects).toEqual([
      {
        kind: 'send',
        to: C,
        message: { type: 'election.quorum.vote', from: A, generation: 5, granted: false },
      },
    ]);
    // B asks again (a retry): granted again, nothing new to persist
    const again = onMessage(policy, 'follower', first.context, voteRequest(B, 5), at(0));
    expect(again.effects.map((e) => e.kind)).toEqual(['send']);
  });

  it('refuses a candidate less up to date, and any candidate while loyal to a live leader', () => {
    const behind = onMessage(policy, 'follower', base, voteRequest(B, 5, 3), at(0, 7));
    expect(behind.effects.at(-1)).toMatchObject({ message: { granted: false } });
    const loyal = { ...base, leader: C, heardAt: 1000 };
    const sticky = onMessage(policy, 'follower', loyal, voteRequest(B, 9), at(1500));
    expect(sticky.context).toBe(loyal);
    expect(sticky.effects).toEqual([
      {
        kind: 'send',
        to: B,
        message: { type: 'election.quorum.vote', from: A, generation: 4, granted: false },
      },
    ]);
    // the minimum election timeout later, loyalty is over
    const later = onMessage(policy, 'follower', loyal, voteRequest(B, 9), at(2000));
    expect(later.effects.at(-1)).toMatchObject({ message: { granted: true } });
  });

  it('messages from outside the peer set, or from ourselves, change nothing', () => {
    for (const from of ['10.9.9.9:2552', A]) {
      const s = onMessage(policy, 'follower', base, voteRequest(from, 9), at(0));
      expect(s.context).toBe(base);
      expect(s.effects).toEqual([]);
      expect(s.raise).toEqual([]);
    }
  });

  it('a campaign persists its own vote first, then logs and asks; a majority of acks makes the leader act until the lease ends', () => {
    const vote = startVote(policy, base, at(0, 2));
    expect(vote.effects.map((e) => e.kind)).toEqual(['persist', 'log', 'broadcast']);
    expect(vote.context).toMatchObject({ generation: 5, votedFor: A, votes: [A] });

    const leading = { ...vote.context, leader: A, notActingSince: 100 };
    const lonely = evaluateLease(policy, leading, at(100));
    expect(lonely.context.acting).toBe(false);
    // B acknowledged a heartbeat sent at 150: A + B are a majority of 3 until 150 + 800
    const acked = leaderHearsAckFromB(leading, 150);
    expect(acked.raise).toEqual([{ type: 'quorum.lease-check' }]);
    const acting = evaluateLease(policy, acked.context, at(200));
    expect(acting.context).toMatchObject({ acting: true, leaseEnd: 950 });
    expect(acting.leaseTimer).toBe(750);
    expect(evaluateLease(policy, acting.context, at(950)).context.acting).toBe(false);
  });

  it('an ack "sent" in the future cannot stretch the lease', () => {
    const leading = { ...base, generation: 5, leader: A };
    const liar = leaderHearsAckFromB(leading, 10_000);
    expect(liar.context).toBe(leading);
    expect(liar.raise).toEqual([]);
  });
});
