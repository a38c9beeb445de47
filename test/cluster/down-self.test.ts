import { describe, expect, it } from 'vitest';
import { downMembers, downSelf } from '../../packages/cluster/src/index.js';
import { contextWith, envOf, grown, key, sends } from '../support/member-fixtures.js';

/**
 * A member whose resolver finds its side losing (and that is not the decider) tells the rest of
 * that side before it takes itself out: its own exit would otherwise be one more reachability
 * change for them, and the side would go down one stable-after round at a time.
 */

describe('downSelf: a losing side is told by the first of it to decide', () => {
  it('sends a downed-notice to each live member of its side, then is down itself', () => {
    const m = grown(5);
    const step = downSelf(envOf(5), contextWith(m), [key(4), key(3)]);
    const told = sends(step).filter((o) => o.to.kind === 'member');
    expect(told.map((o) => [o.to, o.message])).toEqual([
      [
        { kind: 'member', node: { host: '10.0.0.4', port: 2552, uid: 'u4' } },
        { type: 'membership.downed-notice', by: key(5) },
      ],
      [
        { kind: 'member', node: { host: '10.0.0.3', port: 2552, uid: 'u3' } },
        { type: 'membership.downed-notice', by: key(5) },
      ],
    ]);
    const me = step.context.membership!.failed.find((x) => x.name === 'n5');
    expect(me?.status).toBe('down');
  });

  it('tells no member already down, nobody unknown, and never itself', () => {
    const m = downMembers(grown(5), [key(3)]);
    const step = downSelf(envOf(5), contextWith(m), [key(5), key(3), 'nobody:1#x', key(4)]);
    expect(
      sends(step)
        .filter((o) => o.to.kind === 'member')
        .map((o) => o.to),
    ).toEqual([{ kind: 'member', node: { host: '10.0.0.4', port: 2552, uid: 'u4' } }]);
  });

  it('a node already down sends nothing', () => {
    const once = downSelf(envOf(5), contextWith(grown(5)), [key(4)]);
    const twice = downSelf(envOf(5), once.context, [key(4)]);
    expect(sends(twice)).toEqual([]);
    expect(sends(once).some((o) => o.to.kind === 'member')).toBe(true);
    expect(twice.context).toBe(once.context);
  });
});
