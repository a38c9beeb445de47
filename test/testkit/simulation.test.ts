import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  forEachSeed,
  InvariantViolationError,
  SeedFailureError,
  Simulation,
  SimulationTimeoutError,
} from '../../packages/testkit/src/index.js';

afterEach(() => vi.unstubAllEnvs());

describe('Simulation', () => {
  it('runUntil returns the simulated time the condition took', async () => {
    const sim = new Simulation({ seed: 3 });
    let done = false;
    sim.clock.setTimeout(() => (done = true), 37);
    expect(await sim.runUntil(() => done)).toBe(37);
    expect(sim.now).toBe(37);
  });

  it('runUntil throws SimulationTimeoutError naming the seed', async () => {
    const sim = new Simulation({ seed: 42 });
    const error = await sim.runUntil(() => false, { timeoutMs: 100, description: 'never' }).catch((e) => e);
    expect(error).toBeInstanceOf(SimulationTimeoutError);
    expect(error.message).toMatch(/never did not hold within 100 ms.*seed=42/);
    expect(sim.now).toBe(100);
  });

  it('assertInvariant and registered invariants fail with the seed and the time', async () => {
    const sim = new Simulation({ seed: 9 });
    expect(() => sim.assertInvariant('one leader', () => 'two leaders')).toThrow(
      /invariant "one leader" violated at t=0 ms: two leaders \(seed=9\)/,
    );
    expect(() => sim.assertInvariant('fine', () => true)).not.toThrow();
    let leaders = 1;
    sim.clock.setTimeout(() => (leaders = 2), 20);
    sim.addInvariant('at most one leader', () => leaders <= 1);
    const error = await sim.runFor(50).catch((e) => e);
    expect(error).toBeInstanceOf(InvariantViolationError);
    expect(error.message).toMatch(/t=20 ms.*seed=9/);
  });

  it('an error thrown by simulated code fails the run with the seed', async () => {
    const sim = new Simulation({ seed: 5 });
    sim.clock.setTimeout(() => {
      throw new Error('kaboom');
    }, 3);
    await expect(sim.runFor(10)).rejects.toThrow(/run failed at t=3 ms: kaboom \(seed=5\)/);
  });

  it('refuses to run twice at once', async () => {
    const sim = new Simulation({ seed: 1 });
    const first = sim.runFor(10);
    await expect(sim.runFor(10)).rejects.toThrow(/while another is running/);
    await first;
  });

  it('captures JSON logs stamped with simulated time when asked', async () => {
    const sim = new Simulation({ seed: 1, captureLogs: true });
    const a = sim.addSystem({ cluster: 't', host: '10.0.0.1', port: 1 });
    const b = sim.addSystem({ cluster: 't', host: '10.0.0.2', port: 1 });
    sim.clock.setTimeout(() => a.remoteRef(b.node, '/user/x').send({ type: 'test.unknown' }), 10);
    await sim.runFor(20);
    const [rejected] = sim.logEntries('wire.rejected');
    expect(rejected).toMatchObject({ node: '10.0.0.2:1', reason: 'unknown-type', peer: '10.0.0.1:1' });
    expect(rejected!.time).toBeGreaterThan(10);
    expect(rejected!.time).toBeLessThan(12);
    sim.shutdown();
  });

  it('derives uids from the seed', () => {
    const uids = (seed: number) => {
      const sim = new Simulation({ seed });
      return [1, 2].map((port) => sim.addSystem({ cluster: 't', host: 'h', port }).node.uid);
    };
    expect(uids(1)).toEqual(uids(1));
    expect(uids(1)).not.toEqual(uids(2));
    expect(new Set(uids(1)).size).toBe(2);
  });
});

describe('forEachSeed', () => {
  it('runs every seed and rethrows a failure naming its seed', async () => {
    vi.stubEnv('DOYEN_SEED', '');
    const ran: number[] = [];
    const error = await forEachSeed([1, 2, 3], (seed) => {
      ran.push(seed);
      if (seed === 2) throw new Error('boom');
    }).catch((e) => e);
    expect(ran).toEqual([1, 2]);
    expect(error).toBeInstanceOf(SeedFailureError);
    expect(error.seed).toBe(2);
    expect(error.message).toMatch(/boom.*seed=2/);
    expect(error.cause).toBeInstanceOf(Error);
  });

  it('names the seed once when the failure is a simulation error', async () => {
    vi.stubEnv('DOYEN_SEED', '');
    const error = await forEachSeed([4], async (seed) => {
      await new Simulation({ seed }).runUntil(() => false, { timeoutMs: 10 });
    }).catch((e) => e);
    expect(error.message.match(/seed=4/g)).toHaveLength(1);
    expect(error.cause).toBeInstanceOf(SimulationTimeoutError);
  });

  it('replays only DOYEN_SEED when set', async () => {
    vi.stubEnv('DOYEN_SEED', '7');
    const ran: number[] = [];
    await forEachSeed([1, 2, 3], async (seed) => {
      ran.push(seed);
    });
    expect(ran).toEqual([7]);
  });
});
