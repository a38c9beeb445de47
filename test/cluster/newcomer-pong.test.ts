import { describe, expect, it } from 'vitest';
import { nodeKey } from '../../packages/core/src/index.js';
import { formedSimCluster } from '../support/sim-cluster.js';

/**
 * A member that has not heard of a newcomer yet (the coordinator's update still on its way, or
 * the member lagging behind) is pinged by it all the same: the newcomer monitors it from its
 * welcome. Left unanswered, the newcomer judged it unreachable and told everyone; on a loaded
 * start of 50 (session 38) joiners observed dozens of lagging members so, and the coordinator,
 * seeing them unreachable, never moved a joiner up. The member answers, as Akka's receiver does.
 */
describe('a member answers a newcomer it has not heard of yet (simulation)', () => {
  it('a lagging member is not judged unreachable by a newcomer it does not know', async () => {
    const FOUR = ['athens', 'byzantium', 'cyrene', 'delphi'];
    const c = await formedSimCluster(FOUR, { seed: 3803, captureLogs: true }, { downing: 'manual' });
    await c.sim.runFor(2000);
    // delphi hears nothing from the members any more: it lags at the current version
    c.cutOneWay(['athens', 'byzantium', 'cyrene'], ['delphi']);
    c.start('ephesus');
    await c.sim.runFor(10_000);
    const delphiKey = nodeKey(c.get('delphi').system.node);
    const ephesusKey = nodeKey(c.get('ephesus').system.node);
    // the scenario's premise: delphi still does not know ephesus, and ephesus monitors delphi
    expect(c.get('delphi').cluster.state().membership!.members.map(nodeKey)).not.toContain(ephesusKey);
    expect(c.get('ephesus').cluster.state().membership!.members.map(nodeKey)).toContain(delphiKey);
    const verdicts = c.sim
      .logEntries('fd.peer-unreachable')
      .filter((e) => e.node === c.get('ephesus').system.nodeName && e.peer === delphiKey);
    expect(verdicts).toEqual([]);
  });
});
