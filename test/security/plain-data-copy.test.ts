// `read.plainData` copies what came off the wire (a sharded payload in every batch entry) with a
// `for…in` over own keys and the leaves inline (session 37, a third of the time of
// Object.entries). What the copy must keep: only own keys (an enumerable key planted on
// Object.prototype is not taken), no `__proto__` key, the node budget counted for the inline
// leaves too, non-finite numbers and non-plain objects refused, and a fresh object each time.
import { afterEach, describe, expect, it } from 'vitest';
import { ActorSystem, FieldError, read } from '../../packages/core/src/index.js';

const copy = (v: unknown, maxDepth = 32, maxNodes = 100_000) => read.plainData(maxDepth, maxNodes)(v, 'p');

/** The copy without the own-key check: what a plain `for…in` would take (the positive control). */
function naiveForIn(v: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key in v) out[key] = v[key];
  return out;
}

afterEach(() => {
  delete (Object.prototype as Record<string, unknown>).planted;
});

describe('plain data copied off the wire', () => {
  it('takes only own keys: a key planted on Object.prototype is not copied', () => {
    Object.defineProperty(Object.prototype, 'planted', {
      value: 'evil',
      enumerable: true,
      configurable: true,
      writable: true,
    });
    const decoded = { type: 'cart.add', by: 2 };
    // positive control: a for…in without the check takes the planted key as the payload's own
    expect(Object.hasOwn(naiveForIn(decoded), 'planted')).toBe(true);
    const copied = copy(decoded) as Record<string, unknown>;
    expect(Object.hasOwn(copied, 'planted')).toBe(false);
    expect(Object.keys(copied)).toEqual(['type', 'by']);
  });

  it('drops an own __proto__ key: the copy keeps the plain prototype and gains nothing', () => {
    const decoded = JSON.parse('{"type":"t","__proto__":{"admin":true},"n":1}') as Record<string, unknown>;
    // positive control: the decoded object does carry the key as its own
    expect(Object.hasOwn(decoded, '__proto__')).toBe(true);
    const copied = copy(decoded) as Record<string, unknown>;
    expect(Object.getPrototypeOf(copied)).toBe(Object.prototype);
    expect(copied.admin).toBeUndefined();
    expect(copied).toEqual({ type: 't', n: 1 });
  });

  it('counts inline leaves against the node budget', () => {
    const flat = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`f${i}`, `v${i}`]));
    // positive control: the same payload passes with room for its 31 nodes
    expect(copy(flat, 32, 31)).toEqual(flat);
    expect(() => copy(flat, 32, 30)).toThrow(FieldError);
    expect(() => copy(flat, 32, 30)).toThrow(/p\.f29.*too large/);
  });

  it('refuses non-finite numbers and non-plain objects at their path, nested too', () => {
    expect(() => copy({ type: 't', n: Number.NaN })).toThrow(/p\.n.*finite/);
    expect(() => copy({ type: 't', inner: { at: new Date(0) } })).toThrow(/p\.inner\.at.*plain data/);
    expect(() => copy({ type: 't', inner: { deep: { deeper: 1 } } }, 2)).toThrow(/nested too deeply/);
    // positive control: the same shapes with plain values pass
    expect(copy({ type: 't', n: 1, inner: { at: 0 } })).toEqual({ type: 't', n: 1, inner: { at: 0 } });
  });

  it('numbers and refs inline (session 39): counted, refs kept as they are, a non-finite number refused', () => {
    const system = new ActorSystem({ cluster: 'c', host: '127.0.0.1', port: 1, uid: 'u1' });
    const replyTo = system.refFor('doyen://c@127.0.0.1:2/temp/ask-1#u2');
    const ask = { type: 't', n: 7, replyTo };
    const copied = copy(ask) as typeof ask;
    expect(copied).not.toBe(ask);
    expect(copied.replyTo).toBe(replyTo);
    expect(copied.n).toBe(7);
    // each leaf is one node of the budget: four with the object itself
    expect(copy(ask, 32, 4)).toEqual(ask);
    expect(() => copy(ask, 32, 3)).toThrow(/p\.replyTo.*too large/);
    expect(() => copy({ type: 't', n: Number.POSITIVE_INFINITY })).toThrow(/p\.n.*finite/);
    expect(() => copy({ type: 't', inner: { n: -Number.POSITIVE_INFINITY } })).toThrow(/p\.inner\.n.*finite/);
  });

  it('returns a fresh object at every level, with strings, booleans, null and undefined kept', () => {
    const decoded = { type: 't', s: 'x', b: false, z: null, u: undefined, inner: { k: 1 }, list: [{ a: 1 }] };
    const copied = copy(decoded) as typeof decoded;
    expect(copied).toEqual(decoded);
    expect(copied).not.toBe(decoded);
    expect(copied.inner).not.toBe(decoded.inner);
    expect(copied.list[0]).not.toBe(decoded.list[0]);
    expect(Object.hasOwn(copied, 'u')).toBe(true);
  });
});
