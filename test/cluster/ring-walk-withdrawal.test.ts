import { describe, expect, it } from 'vitest';
import { heartbeatPeers, peersChanged } from '../../packages/cluster/src/index.js';
import { nodeKey } from '../../packages/core/src/index.js';
import { formedSimCluster } from '../support/sim-cluster.js';

/**
 * An observer that judges its ring targets unreachable walks on to the members behind them; when
 * it hears them again the walk is undone in the same tick, and the members it had walked to leave
 * its table. Their "unreachable" must be withdrawn then too: the table change that dropped them
 * reported nothing, so every member kept the observation for good and, under manual downing, the
 * coordinator never moved a joiner up again (a 50-node start at load 8–22, session 38: a member
 * stalled for a second or two on a loaded host is exactly such an observer).
 */

describe('an observation of a member no longer monitored is withdrawn', () => {
  it('the failure detector reports a peer that left its table while unreachable as reachable', () => {
    const step = peersChanged(
      { peers: { a: 'unreachable', b: 'unreachable', c: 'reachable' } },
      { b: 'reachable', d: 'unheard' },
    );
    expect(step.effects.filter((e) => e.kind === 'tell-membership')).toEqual([
      {
        kind: 'tell-membership',
        changes: [
          { subject: 'b', reachable: true },
          { subject: 'a', reachable: true },
        ],
      },
    ]);
    // a reachable peer that leaves the table was never reported unreachable: no news
    const calm = peersChanged({ peers: { c: 'reachable' } }, { d: 'reachable' });
    expect(calm.effects.filter((e) => e.kind === 'tell-membership')).toEqual([]);
  });

  const SIX = ['athens', 'byzantium', 'cyrene', 'delphi', 'ephesus', 'fayum'];
  const RING = { allToAllMax: 3, monitoredByNrOfMembers: 2 };

  it('a member that stalled and walked its ring leaves no observation behind, and a later joiner moves up (simulation)', async () => {
    // pulls beyond the run: the pull timer's re-assertion (reachability-reassert.test.ts) repairs
    // this too, a pull interval later; here only the failure detector's own report may
    const c = await formedSimCluster(
      SIX,
      { seed: 3802 },
      { downing: 'manual', pullIntervalMs: 10_000_000, heartbeatRing: RING },
    );
    await c.sim.runFor(2000);
    const delphi = c.get('delphi');
    const delphiKey = nodeKey(delphi.system.node);
    const members = delphi.cluster.state().membership!.members.filter((m) => nodeKey(m) !== delphiKey);
    const ringTargets = new Set(
      heartbeatPeers({ address: delphi.system.nodeName, uid: delphi.system.node.uid }, members, {
        config: RING,
      }).targets.map(nodeKey),
    );
    // delphi's traffic is held for 3 s: it hears nobody, judges its targets and walks on
    c.sim.pause(delphi.system, 3000);
    const walkedTo = new Set<string>();
    const watch = () => {
      for (const [subject, observers] of Object.entries(delphi.cluster.unreachableObservers()))
        if (observers.includes(delphiKey) && !ringTargets.has(subject)) walkedTo.add(subject);
      return false;
    };
    await c.sim.runUntil(watch, { timeoutMs: 3000 }).catch(() => undefined);
    // positive control: the stall did make delphi observe members beyond its ring targets
    expect(walkedTo.size).toBeGreaterThan(0);
    await c.sim.runFor(5000);
    for (const name of SIX)
      expect({ name, seen: c.get(name).cluster.unreachableObservers() }).toEqual({ name, seen: {} });
    c.start('gortyn');
    await c.sim.runUntil(() => c.converged([...SIX, 'gortyn']), {
      timeoutMs: 20_000,
      description: 'gortyn up everywhere',
    });
  });
});
