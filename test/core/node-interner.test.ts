import { describe, expect, it } from 'vitest';
import { ActorSystem } from '../../packages/core/src/index.js';
import { MAX_INTERNED_NODES, NodeInterner } from '../../packages/core/src/node-interner.js';

const address = (port: number, uid: string, path: string) => `doyen://test@127.0.0.1:${port}${path}#${uid}`;

describe('remote refs share one node object per node incarnation (issue 31, fan-out)', () => {
  it('refs parsed from strings to actors of one incarnation read the same node object', () => {
    const system = new ActorSystem({ cluster: 'test', host: '127.0.0.1', port: 1 });
    const a = system.refFor(address(2, 'u1', '/user/a'));
    const b = system.refFor(address(2, 'u1', '/user/b'));
    expect(a.address.node).toBe(b.address.node);
    expect(a.address.node).toEqual({ host: '127.0.0.1', port: 2, uid: 'u1' });
    // the rest of the address is each ref's own
    expect([a.path, b.path]).toEqual(['/user/a', '/user/b']);
    expect(a.id).toBe(address(2, 'u1', '/user/a'));
  });

  it('another incarnation or another node is another object', () => {
    const system = new ActorSystem({ cluster: 'test', host: '127.0.0.1', port: 1 });
    const first = system.refFor(address(2, 'u1', '/user/a'));
    expect(system.refFor(address(2, 'u2', '/user/a')).address.node).not.toBe(first.address.node);
    expect(system.refFor(address(3, 'u1', '/user/a')).address.node).not.toBe(first.address.node);
  });

  it('is bounded: ever new incarnations start the table over, and refs made before keep their node', () => {
    const interner = new NodeInterner();
    const early = interner.intern({ host: 'h', port: 1, uid: 'u0' });
    for (let i = 1; i <= 3 * MAX_INTERNED_NODES; i++) interner.intern({ host: 'h', port: 1, uid: `u${i}` });
    expect(interner.size).toBeLessThanOrEqual(MAX_INTERNED_NODES);
    expect(early).toEqual({ host: 'h', port: 1, uid: 'u0' });
    // a forgotten incarnation is interned anew, as equal as before
    expect(interner.intern({ host: 'h', port: 1, uid: 'u0' })).toEqual(early);
  });
});
