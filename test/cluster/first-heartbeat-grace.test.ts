import { describe, expect, it } from 'vitest';
import { detectionTimeMs } from '../../packages/cluster/src/failure-detector/detector.js';
import { defaultClusterConfig, resolveClusterConfig } from '../../packages/cluster/src/model/config.js';
import { GREEK, SimCluster } from '../support/sim-cluster.js';

const THREE = GREEK.slice(0, 3) as unknown as string[];
const GRACE = defaultClusterConfig.firstHeartbeatGraceMs;
const INTERVAL = defaultClusterConfig.heartbeatIntervalMs;
const DETECTION = detectionTimeMs(defaultClusterConfig.failureDetector, INTERVAL);

/** Three members up, then delphi joins; returns once athens admitted it (before delphi hears of it). */
async function admitDelphi(seed: number) {
  const c = new SimCluster({ seed, captureLogs: true }, {});
  for (const n of THREE) {
    c.start(n);
    await c.sim.runFor(200);
  }
  await c.sim.runUntil(() => c.converged(THREE));
  c.start('delphi');
  const admitted = (n: string) =>
    c
      .get(n)
      .cluster.state()
      .membership?.members.some((m) => m.name === 'delphi') ?? false;
  await c.sim.runUntil(() => admitted('athens'), { stepMs: 1 });
  return { c, admittedAt: c.sim.now };
}

const unreachableVerdicts = (c: SimCluster, after: number) =>
  c.sim
    .logEntries('fd.peer-unreachable')
    .filter((e) => (e.time as number) >= after && String(e.peer).startsWith('10.0.0.4:2552'));

describe('a member not heard from yet is judged firstHeartbeatGraceMs later (Akka: expected-response-after)', () => {
  it('a newcomer whose first heartbeat takes 2.5 s (a loaded host) is never found unreachable', async () => {
    const { c, admittedAt } = await admitDelphi(61);
    // frozen the moment it is admitted: nothing it sends leaves for 2.5 s, so nobody heard it yet
    c.sim.pause(c.get('delphi').system, 2500);
    await c.sim.runFor(8000);
    expect(c.sim.logEntries('member.unreachable').filter((e) => (e.time as number) >= admittedAt)).toEqual(
      [],
    );
    expect(unreachableVerdicts(c, admittedAt)).toEqual([]);
    expect(c.converged([...THREE, 'delphi'])).toBe(true);
  });

  it('positive control: a newcomer that never heartbeats is found unreachable, one grace after a normal detection', async () => {
    const { c, admittedAt } = await admitDelphi(62);
    c.sim.pause(c.get('delphi').system, Number.POSITIVE_INFINITY);
    await c.sim.runUntil(() => unreachableVerdicts(c, admittedAt).length > 0, { timeoutMs: 15_000 });
    const first = Math.min(...unreachableVerdicts(c, admittedAt).map((e) => e.time as number));
    expect(first - admittedAt).toBeGreaterThanOrEqual(GRACE + DETECTION - 2 * INTERVAL);
    expect(first - admittedAt).toBeLessThanOrEqual(GRACE + DETECTION + INTERVAL);
    expect(unreachableVerdicts(c, admittedAt)[0]).toMatchObject({ heard: false });
  });

  it('positive control: a member heard from once is judged without the grace (a 2.5 s pause is found)', async () => {
    const { c } = await admitDelphi(63);
    await c.sim.runUntil(() => c.converged([...THREE, 'delphi']));
    await c.sim.runFor(2000);
    const pausedAt = c.sim.now;
    c.sim.pause(c.get('delphi').system, 2500);
    await c.sim.runUntil(() => unreachableVerdicts(c, pausedAt).length > 0, { timeoutMs: 2500 });
    const first = Math.min(...unreachableVerdicts(c, pausedAt).map((e) => e.time as number));
    expect(first - pausedAt).toBeLessThanOrEqual(DETECTION + INTERVAL);
    expect(unreachableVerdicts(c, pausedAt)[0]).toMatchObject({ heard: true });
  });

  it('is a setting: 0 turns it off, a negative value is refused by name', () => {
    const seeds = [{ host: '10.0.0.1', port: 2552 }];
    expect(resolveClusterConfig({ seeds, firstHeartbeatGraceMs: 0 }).firstHeartbeatGraceMs).toBe(0);
    expect(() => resolveClusterConfig({ seeds, firstHeartbeatGraceMs: -1 })).toThrow(
      /cluster.firstHeartbeatGraceMs must be >= 0, got -1/,
    );
  });
});
