import { describe, expect, it } from 'vitest';
import { executeDowning, type Membership, type Update } from '../../packages/cluster/src/index.js';
import { contextWith, envOf, grown, key, sends } from '../support/member-fixtures.js';

/**
 * A decider's decision reaches its side as one membership update: every update costs each member
 * of the side a turn (decode, adopt, its machines, its logs), and the side waits for this one.
 */
describe('executeDowning: one update per decision', () => {
  it('records the unreachable and downs them in one version, sent once to each member of the side', () => {
    const m = grown(5);
    const ctx = { ...contextWith(m), observations: { [key(4)]: [key(1)], [key(5)]: [key(2)] } };
    const step = executeDowning(envOf(1), ctx, [key(4), key(5)], [key(4), key(5)]);
    const updates = sends(step).filter((o) => (o.message as Update).type === 'membership.update');
    expect(updates.map((o) => o.to)).toEqual([
      { kind: 'member', node: { host: '10.0.0.2', port: 2552, uid: 'u2' } },
      { kind: 'member', node: { host: '10.0.0.3', port: 2552, uid: 'u3' } },
    ]);
    const sent = (updates[0]!.message as Update).membership;
    expect(sent).toBe(step.context.membership);
    expect(sent.members.map((x) => x.name)).toEqual(['n1', 'n2', 'n3']);
    expect(sent.failed.map((x) => [x.name, x.status])).toEqual([
      ['n4', 'down'],
      ['n5', 'down'],
    ]);
    expect(sent.unreachable).toEqual([]);
    // both changes (unreachable recorded, then downed) are in its version
    expect(sent.version).toBe(m.version + 2);
  });

  it('an indirectly connected member that is not downed stays recorded unreachable, and hears the news', () => {
    const m: Membership = grown(5);
    const ctx = { ...contextWith(m), observations: { [key(4)]: [key(1)], [key(5)]: [key(2)] } };
    const step = executeDowning(envOf(1), ctx, [key(5)], [key(5)]);
    const to = sends(step)
      .filter((o) => (o.message as Update).type === 'membership.update')
      .map((o) => (o.to as { node: { host: string } }).node.host);
    expect(to).toEqual(['10.0.0.2', '10.0.0.3', '10.0.0.4']);
    expect(step.context.membership!.unreachable).toEqual([key(4)]);
  });
});
