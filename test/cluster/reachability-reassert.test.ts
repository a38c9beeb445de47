import { describe, expect, it } from 'vitest';
import { heartbeatPeers } from '../../packages/cluster/src/index.js';
import { nodeKey } from '../../packages/core/src/index.js';
import { formedSimCluster, type SimCluster } from '../support/sim-cluster.js';

/**
 * Reachability reports are changes of mind, sent once and delivered at most once. A member's
 * "reachable again" that never reaches the coordinator left its old "unreachable" there for good:
 * under manual downing nobody is downed, so the coordinator never sees convergence again and every
 * later joiner stays `joining` (a 50-node start at load 8–22, session 38). Members that see anyone
 * unreachable in the membership re-assert their own view of those members to the coordinator on
 * their pull timer, so a lost report is repaired within a pull interval.
 */

const SIX = ['athens', 'byzantium', 'cyrene', 'delphi', 'ephesus', 'fayum'];
/** A ring of two monitors per member: the coordinator does not watch every member itself. */
const RING = { allToAllMax: 3, monitoredByNrOfMembers: 2 };

interface Lost {
  readonly c: SimCluster;
  /** The member reported unreachable, and the observer whose "reachable again" was lost. */
  readonly subject: string;
  readonly observer: string;
}

/**
 * A member athens (the coordinator) does not monitor itself is paused until its observers report
 * it unreachable; one observer's "reachable again" is then lost on its way to athens.
 */
async function lostReachableReport(seed: number, pullIntervalMs: number): Promise<Lost> {
  const c = await formedSimCluster(SIX, { seed }, { downing: 'manual', pullIntervalMs, heartbeatRing: RING });
  await c.sim.runFor(2000);
  const athens = c.get('athens');
  const keyOf = (name: string) => nodeKey(c.get(name).system.node);
  const watched = new Set(
    heartbeatPeers(
      { address: athens.system.nodeName, uid: athens.system.node.uid },
      athens.cluster.state().membership!.members.filter((m) => nodeKey(m) !== keyOf('athens')),
      { config: RING },
    ).targets.map((m) => m.name),
  );
  const subjectName = SIX.slice(1).find((n) => !watched.has(n))!;
  const subject = keyOf(subjectName);
  c.sim.pause(c.get(subjectName).system, 3000);
  await c.sim.runUntil(() => athens.cluster.state().membership!.unreachable.includes(subject), {
    timeoutMs: 5000,
    description: `athens marked ${subjectName} unreachable`,
  });
  await c.sim.runFor(500);
  const observer = athens.cluster.unreachableObservers()[subject]![0]!;
  const observerSystem = [...c.nodes.values()].find((n) => nodeKey(n.system.node) === observer)!.system;
  // until the observer's next report to athens has been lost
  let lost = false;
  const stop = c.sim.network.observe((e) => {
    if (
      e.kind === 'drop' &&
      e.messageType === 'membership.reachability' &&
      e.from === observerSystem.nodeName
    )
      if (e.to === athens.system.nodeName) lost = true;
  });
  c.sim.blockOneWay(observerSystem, athens.system);
  await c.sim.runUntil(() => lost, { timeoutMs: 10_000, description: "the observer's report lost" });
  c.sim.healLink(observerSystem, athens.system);
  stop();
  return { c, subject, observer };
}

describe('a lost reachability report is repaired (simulation)', () => {
  it('the coordinator drops the stale unreachable observation, and a later joiner moves up', async () => {
    const { c } = await lostReachableReport(3801, 5000);
    const athens = c.get('athens');
    await c.sim.runUntil(() => athens.cluster.state().membership!.unreachable.length === 0, {
      timeoutMs: 15_000,
      description: 'athens sees nobody unreachable',
    });
    c.start('gortyn');
    await c.sim.runUntil(() => c.converged([...SIX, 'gortyn']), {
      timeoutMs: 20_000,
      description: 'gortyn up everywhere',
    });
  });

  it('positive control: without the re-assertion (pull timer beyond the run) the observation stays and the joiner never moves up', async () => {
    const { c, subject, observer } = await lostReachableReport(3801, 10_000_000);
    const athens = c.get('athens');
    c.start('gortyn');
    await c.sim.runFor(30_000);
    expect(athens.cluster.unreachableObservers()[subject]).toEqual([observer]);
    expect(athens.cluster.state().membership!.unreachable).toEqual([subject]);
    expect(c.upMembers('athens')).not.toContain('gortyn');
  });
});
