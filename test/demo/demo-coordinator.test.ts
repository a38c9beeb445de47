import { describe, expect, it } from 'vitest';
import { coordinatorNodeArgs } from '../../apps/partition-demo/src/coordinator-args.js';
import { describe as describeLine } from '../../apps/partition-demo/src/events.js';

describe('partition demo: --coordinator', () => {
  it('turns the mode into doyen node arguments, and says what is wrong with a bad request', () => {
    expect(coordinatorNodeArgs(undefined, undefined)).toEqual([]);
    expect(coordinatorNodeArgs('emergent', undefined)).toEqual([]);
    expect(coordinatorNodeArgs('quorum', undefined)).toEqual(['--coordinator', 'quorum']);
    expect(coordinatorNodeArgs('etcd', 'http://127.0.0.1:2379')).toEqual([
      '--coordinator',
      'etcd',
      '--etcd',
      'http://127.0.0.1:2379',
    ]);
    expect(coordinatorNodeArgs('etcd', undefined)).toMatch(/needs --etcd/);
    expect(coordinatorNodeArgs('quorum', 'http://x:1')).toMatch(/only goes with --coordinator etcd/);
    expect(coordinatorNodeArgs('raft', undefined)).toMatch(/must be emergent, quorum or etcd/);
  });

  it('shows a node that starts leading and may act; other election views are not news', () => {
    const nameOf = (a: string) => (a === '127.0.0.1:4001' ? 'athens' : a);
    const line = { event: 'election.leader', algorithm: 'quorum', node: '127.0.0.1:4001', term: 3 };
    expect(describeLine({ ...line, role: 'leading', acting: true }, nameOf)).toMatchObject({
      event: 'election.leader',
      text: 'athens leads (quorum, term 3)',
    });
    expect(describeLine({ ...line, role: 'leading', acting: false }, nameOf)).toBeUndefined();
    expect(describeLine({ ...line, role: 'following', acting: false }, nameOf)).toBeUndefined();
  });
});
