import { describe, expect, it } from 'vitest';
import {
  formatActorAddress,
  InvalidAddressError,
  parseActorAddress,
  parseNodeAddress,
} from '../../packages/core/src/index.js';

describe('actor addresses', () => {
  it('round-trips doyen://cluster@host:port/path#uid', () => {
    const text = 'doyen://shop@10.0.0.7:2552/user/orders#a1b2c3';
    const parsed = parseActorAddress(text);
    expect(parsed).toEqual({
      cluster: 'shop',
      node: { host: '10.0.0.7', port: 2552, uid: 'a1b2c3' },
      path: '/user/orders',
    });
    expect(formatActorAddress(parsed)).toBe(text);
  });

  it('brackets IPv6 hosts', () => {
    const parsed = parseActorAddress('doyen://c@[::1]:7000/system/membership#ff');
    expect(parsed.node.host).toBe('::1');
    expect(formatActorAddress(parsed)).toBe('doyen://c@[::1]:7000/system/membership#ff');
  });

  it.each([
    'http://c@h:1/user/a#u',
    'doyen://c@h:1/user/a',
    'doyen://c@h:99999/user/a#u',
    'doyen://c@h:1/user/../a#u',
    'doyen://c@h:1/#u',
    '',
  ])('rejects %j with a typed error', (text) => {
    expect(() => parseActorAddress(text)).toThrow(InvalidAddressError);
  });

  it('parses node addresses', () => {
    expect(parseNodeAddress('127.0.0.1:2552')).toEqual({ host: '127.0.0.1', port: 2552 });
    expect(() => parseNodeAddress('nohost')).toThrow(InvalidAddressError);
  });
});
