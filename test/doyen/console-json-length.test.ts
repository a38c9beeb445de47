import { describe, expect, it } from 'vitest';
import { jsonLength } from '../../packages/doyen/src/console/json-length.js';

/**
 * The console history's size cap counts each frame's JSON; jsonLength gives that length without
 * stringifying the parts a frame shares with the frames before it (kept per object).
 */
describe('jsonLength', () => {
  it('is the length of JSON.stringify for the shapes a view takes, shared parts included', () => {
    const row = { key: 'a#1', address: 'a', status: 'up', roles: ['x', 'é"\\\n'], ageRank: 0 };
    const cases: unknown[] = [
      null,
      0,
      -1.5e-7,
      1e21,
      Number.NaN,
      true,
      'text "quoted" \u2028 \u0001',
      [],
      {},
      [1, undefined, () => 1, null],
      { a: undefined, b: 1, f: () => 1, 'k"ey': [row, row] },
      { at: 1, kind: 'view', view: { key: 'a#1', members: [row], partitions: { owners: ['a#1', ''] } } },
    ];
    for (const value of cases) expect(jsonLength(value)).toBe(JSON.stringify(value)?.length ?? 0);
  });

  it('takes a measured object from what it kept (which is why frames must not change once measured)', () => {
    const shared = { status: 'up' };
    const frame = { rows: [shared] };
    expect(jsonLength(frame)).toBe(JSON.stringify(frame).length);
    // positive control that the cache is used: changing a measured object is not seen
    shared.status = 'unreachable';
    expect(jsonLength(frame)).not.toBe(JSON.stringify(frame).length);
    expect(jsonLength({ rows: [{ status: 'unreachable' }] })).toBe(JSON.stringify(frame).length);
  });
});
