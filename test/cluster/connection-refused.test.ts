import { describe, expect, it } from 'vitest';
import {
  CONNECTION_REFUSED,
  connectionRefused,
  type FailureDetectorContext,
  type FailureDetectorEffect,
} from '../../packages/cluster/src/failure-detector/failure-detector-machine.js';
import { defaultClusterConfig } from '../../packages/cluster/src/model/config.js';
import { GREEK, SimCluster } from '../support/sim-cluster.js';

/**
 * A refused dial (nothing listens at the address: a kill -9 closes the port at once) judges the
 * peers monitored at that address unreachable now, not when phi crosses ~1 s later. It is a
 * reachability observation only: the split-brain resolver still waits its stable-after.
 */

const A = '10.0.0.2:2552';
const B = '10.0.0.3:2552';
const ctx = (peers: FailureDetectorContext['peers']): FailureDetectorContext => ({ peers });
const kinds = (effects: readonly FailureDetectorEffect[]) => effects.map((e) => e.kind);

describe('connectionRefused (pure decision)', () => {
  it('judges every monitored incarnation at the refused address unreachable, with the cause logged', () => {
    const before = ctx({ [`${A}#u1`]: 'reachable', [`${B}#u2`]: 'suspect' });
    const step = connectionRefused(before, A);
    expect(step.context.peers).toEqual({ [`${A}#u1`]: 'unreachable', [`${B}#u2`]: 'suspect' });
    expect(kinds(step.effects)).toEqual([
      'hold-unreachable',
      'log',
      'count-refused',
      'tell-membership',
      'tell-downing',
    ]);
    expect(step.effects).toContainEqual({ kind: 'hold-unreachable', keys: [`${A}#u1`] });
    expect(step.effects).toContainEqual({
      kind: 'tell-membership',
      changes: [{ subject: `${A}#u1`, reachable: false }],
    });
    expect(step.effects).toContainEqual({ kind: 'tell-downing', reachable: [`${B}#u2`] });
    expect(step.effects.find((e) => e.kind === 'log')).toMatchObject({
      event: 'fd.peer-unreachable',
      fields: { peer: `${A}#u1`, cause: CONNECTION_REFUSED },
    });
  });

  it('a peer not heard from yet is judged too, but the resolver hears nothing new (it was not counted reachable)', () => {
    const step = connectionRefused(ctx({ [`${A}#u1`]: 'unheard', [`${B}#u2`]: 'reachable' }), A);
    expect(step.context.peers[`${A}#u1`]).toBe('unreachable');
    expect(kinds(step.effects)).not.toContain('tell-downing');
    expect(kinds(step.effects)).toContain('tell-membership');
  });

  it('is no news for an unmonitored address, a peer already unreachable, or another port on the same host', () => {
    const before = ctx({ [`${A}#u1`]: 'unreachable', [`${B}#u2`]: 'reachable' });
    for (const address of [A, '10.0.0.9:2552', '10.0.0.3:2553']) {
      const step = connectionRefused(before, address);
      expect(step.context).toBe(before);
      expect(step.effects).toEqual([]);
    }
  });
});

const THREE = GREEK.slice(0, 3) as unknown as string[];
const INTERVAL = defaultClusterConfig.heartbeatIntervalMs;

/** Three converged members; crashes (or freezes) cyrene; returns when the first survivor judged it. */
async function judged(seed: number, fault: 'crash' | 'pause', fastPath = true) {
  // fastPath false: the positive control's switch, a network where a dead address drops instead
  const c = new SimCluster({ seed, captureLogs: true, network: { refuseDeadAddresses: fastPath } }, {});
  for (const n of THREE) {
    c.start(n);
    await c.sim.runFor(200);
  }
  await c.sim.runUntil(() => c.converged(THREE));
  await c.sim.runFor(2000);
  const victim = c.get('cyrene').system;
  const victimKey = `${victim.nodeName}#${victim.node.uid}`;
  const at = c.sim.now;
  if (fault === 'crash') c.crash('cyrene');
  else c.sim.pause(victim, Number.POSITIVE_INFINITY);
  const verdicts = () =>
    c.sim.logEntries('fd.peer-unreachable').filter((e) => e.peer === victimKey && (e.time as number) >= at);
  await c.sim.runUntil(() => verdicts().length >= 2, { timeoutMs: 10_000 });
  return { c, after: Math.max(...verdicts().map((e) => e.time as number)) - at, verdicts: verdicts() };
}

describe('a crashed member is judged on the refused dial; a paused one keeps the phi path (simulation)', () => {
  it('both survivors judge a crashed member within two heartbeat intervals, citing the refusal', async () => {
    const { after, verdicts, c } = await judged(281, 'crash');
    expect(after).toBeLessThanOrEqual(2 * INTERVAL);
    expect(verdicts.every((v) => v.cause === CONNECTION_REFUSED)).toBe(true);
    // an observation, not a downing: nobody downs it before stable-after has run
    expect(c.downedAt).toEqual([]);
    await c.sim.runUntil(() => c.converged(['athens', 'byzantium']), { timeoutMs: 10_000 });
  });

  it('positive control: where the dead address drops instead of refusing, the same crash waits for phi (~1 s)', async () => {
    const { after, verdicts } = await judged(281, 'crash', false);
    expect(after).toBeGreaterThan(3 * INTERVAL);
    expect(verdicts.every((v) => v.cause === 'phi-accrual')).toBe(true);
  });

  it('a paused (SIGSTOP) member is never refused: judged by phi, not by the fast path', async () => {
    const { after, verdicts } = await judged(282, 'pause');
    expect(after).toBeGreaterThan(3 * INTERVAL);
    expect(verdicts.every((v) => v.cause === 'phi-accrual')).toBe(true);
  });
});
