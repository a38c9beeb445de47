import { describe, expect, it } from 'vitest';
import {
  type BootstrapSettings,
  type BootstrapState,
  decide,
  discovered,
  initialBootstrapState,
  observed,
} from '../../packages/doyen/src/bootstrap/bootstrap-decision.js';
import { compareContactPoints, sortedUnique } from '../../packages/doyen/src/bootstrap/discovery.js';
import { parseSeedNodesAnswer } from '../../packages/doyen/src/bootstrap/seed-nodes.js';

const cp = (i: number) => ({ host: `10.0.0.${i}`, port: 8558 });
const settings = (self: number, over: Partial<BootstrapSettings> = {}): BootstrapSettings => ({
  self: cp(self),
  requiredContactPoints: 2,
  stableMarginMs: 5000,
  probeFreshMs: 3000,
  maxSeedNodes: 5,
  ...over,
});

/** Discovered `points` at 0, then every one answered `seeds(i)` at `at`. */
function seen(
  points: number[],
  at: number,
  seeds: (i: number) => { host: string; port: number }[] = () => [],
) {
  let s: BootstrapState = discovered(initialBootstrapState(0), points.map(cp), 0);
  for (const i of points) s = observed(s, cp(i), seeds(i), at);
  return s;
}

describe('the bootstrap decision (Akka Cluster Bootstrap rule)', () => {
  it('only the lowest contact point forms, once enough were seen, stable, and all answered', () => {
    const s = seen([3, 1, 2], 5500);
    expect(decide(s, settings(1), 5500)).toEqual({ kind: 'form' });
    for (const other of [2, 3]) {
      const d = decide(s, settings(other), 5500);
      expect(d.kind).toBe('keep-probing');
      expect(d.kind === 'keep-probing' && d.reason).toContain('10.0.0.1:8558');
    }
  });

  it('compares IPv4 hosts numerically (10.0.0.9 is lower than 10.0.0.10)', () => {
    expect(compareContactPoints(cp(9), cp(10))).toBeLessThan(0);
    const s = seen([10, 9], 5500);
    expect(decide(s, settings(9), 5500)).toEqual({ kind: 'form' });
    expect(decide(s, settings(10), 5500).kind).toBe('keep-probing');
  });

  it('joins whatever a contact point offers, before any other rule', () => {
    const running = [{ host: '10.0.0.7', port: 25520 }];
    // one contact point only, not stable yet: still joins the running cluster
    const s = seen([1], 100, (i) => (i === 1 ? running : []));
    expect(decide(s, settings(1), 100)).toEqual({ kind: 'join', seedNodes: running });
  });

  it('never forms with fewer than the required contact points (discovery found nothing, or too little)', () => {
    expect(decide(initialBootstrapState(0), settings(1), 60_000).kind).toBe('keep-probing');
    const one = seen([1], 59_000);
    const d = decide(one, settings(1), 60_000);
    expect(d).toEqual({ kind: 'keep-probing', reason: '1 contact point(s) discovered, 2 required' });
  });

  it('waits for the stable margin, restarted by any change of the set', () => {
    let s = seen([1, 2], 4000);
    expect(decide(s, settings(1), 4000).kind).toBe('keep-probing');
    s = discovered(s, [cp(1), cp(2), cp(3)], 4000); // a third appears: the margin starts again
    s = observed(observed(observed(s, cp(1), [], 8000), cp(2), [], 8000), cp(3), [], 8000);
    expect(decide(s, settings(1), 8000).kind).toBe('keep-probing');
    expect(decide(s, settings(1), 9000)).toEqual({ kind: 'form' });
    // the same set again (other order, duplicates) is no change
    expect(discovered(s, [cp(3), cp(1), cp(2), cp(1)], 9500)).toBe(s);
  });

  it('waits while a contact point has not answered recently (a partitioned start)', () => {
    let s = discovered(initialBootstrapState(0), [cp(1), cp(2), cp(3)], 0);
    s = observed(observed(s, cp(1), [], 6000), cp(2), [], 6000); // 3 is cut off
    const d = decide(s, settings(1), 6000);
    expect(d).toEqual({ kind: 'keep-probing', reason: 'no recent answer from 10.0.0.3:8558' });
    // an answer too old counts as none
    s = observed(s, cp(3), [], 1000);
    expect(decide(s, settings(1), 6000).kind).toBe('keep-probing');
    s = observed(s, cp(3), [], 6000);
    expect(decide(s, settings(1), 6000)).toEqual({ kind: 'form' });
  });

  it('forgets the answers of contact points that left the records, and ignores strangers', () => {
    let s = seen([1, 2], 100, (i) => (i === 2 ? [{ host: '10.0.0.2', port: 25520 }] : []));
    s = discovered(s, [cp(1), cp(3)], 200);
    expect([...s.observations.keys()]).toEqual(['10.0.0.1:8558']);
    expect(observed(s, cp(9), [], 300)).toBe(s);
  });

  it('sorts and de-duplicates contact points in one order on every node', () => {
    const points = [cp(10), cp(2), { host: 'fd00::1', port: 1 }, cp(2), { host: 'b.example', port: 2 }];
    expect(sortedUnique(points)).toEqual([
      cp(2),
      cp(10),
      { host: 'fd00::1', port: 1 },
      { host: 'b.example', port: 2 },
    ]);
  });
});

describe('a probe answer', () => {
  const member = (node: string, status = 'Up') => ({ node, nodeUid: 'u', status, roles: [] });

  it('yields the up members of our cluster, rebuilt as addresses', () => {
    const body = {
      selfNode: 'doyen://c@10.0.0.1:25520',
      seedNodes: [
        member('doyen://c@10.0.0.1:25520'),
        member('doyen://c@[fd00::2]:25520'),
        member('doyen://c@10.0.0.3:25520', 'Joining'),
      ],
    };
    expect(parseSeedNodesAnswer(body, 'c')).toEqual([
      { host: '10.0.0.1', port: 25520 },
      { host: 'fd00::2', port: 25520 },
    ]);
  });

  it.each([
    ['not an object', 'nope'],
    ['no list', { selfNode: 'x' }],
    ['another cluster', { seedNodes: [member('doyen://other@10.0.0.1:25520')] }],
    ['a node without a URI', { seedNodes: [{ status: 'Up' }] }],
    ['not host:port', { seedNodes: [member('doyen://c@10.0.0.1')] }],
    ['too many', { seedNodes: Array.from({ length: 65 }, (_, i) => member(`doyen://c@10.0.0.${i}:1`)) }],
  ])('is refused when %s', (_what, body) => {
    expect(() => parseSeedNodesAnswer(body, 'c')).toThrow(/seed|object|array|cluster|URI|host:port/);
  });
});
