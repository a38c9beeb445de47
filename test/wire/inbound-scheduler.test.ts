import { describe, expect, it } from 'vitest';
import { type DecodeTask, InboundScheduler } from '../../packages/wire/src/inbound-scheduler.js';

/** A connection with `frames` frames queued; each slice takes one and costs `costMs` of busy time. */
class Task implements DecodeTask {
  queued = false;
  readonly midFrame = false;
  done = 0;
  constructor(
    readonly member: boolean,
    private frames: number,
    private readonly costMs: number,
  ) {}
  runSlice(): boolean {
    const until = performance.now() + this.costMs;
    while (performance.now() < until) {
      /* decoding */
    }
    this.frames--;
    this.done++;
    return this.frames > 0;
  }
}

const turnsUntil = async (done: () => boolean, maxTurns: number): Promise<number> => {
  for (let turn = 1; turn <= maxTurns; turn++) {
    await new Promise((r) => setImmediate(r));
    if (done()) return turn;
  }
  return Number.POSITIVE_INFINITY;
};

describe('InboundScheduler', () => {
  it('serves members first, yet gives a non-member (a joiner) a slice in every turn while members always have work', async () => {
    const scheduler = new InboundScheduler<Task>(2, (t) => t.member);
    // 50 members, each with a backlog far longer than the test: they always have work queued
    const members = Array.from({ length: 50 }, () => new Task(true, 1_000_000, 0.1));
    const joiner = new Task(false, 3, 0.01);
    for (const m of members) scheduler.wake(m);
    scheduler.wake(joiner);
    const turns = await turnsUntil(() => joiner.done === 3, 20);
    scheduler.close();
    // its 3 frames in its first 3 turns (one slice a turn at least), while members got most slices
    expect(turns).toBeLessThanOrEqual(3);
    expect(members.reduce((n, m) => n + m.done, 0)).toBeGreaterThan(joiner.done);
  });

  it('positive control: with strict member priority the same joiner starves', async () => {
    const strict = new InboundScheduler<Task>(2, (t) => t.member, Number.POSITIVE_INFINITY);
    const members = Array.from({ length: 50 }, () => new Task(true, 1_000_000, 0.1));
    const joiner = new Task(false, 3, 0.01);
    for (const m of members) strict.wake(m);
    strict.wake(joiner);
    const turns = await turnsUntil(() => joiner.done === 3, 20);
    strict.close();
    expect(turns).toBe(Number.POSITIVE_INFINITY);
    expect(joiner.done).toBe(0);
  });
});
