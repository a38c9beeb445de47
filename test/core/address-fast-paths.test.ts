// The owner of a remote ask parses its reply address twice (the frame's sender, the reply-to ref):
// paths are checked in one pass over their characters, and an address from the node parsed last
// skips the regex for its `doyen://<cluster>@<host>:<port>` (issue 29). Both must accept and refuse
// exactly what the regexes do: checked here against the former implementations, kept as references.
import { describe, expect, it } from 'vitest';
import {
  InvalidAddressError,
  isValidPath,
  parseActorAddress,
  parseActorLocation,
} from '../../packages/core/src/index.js';

const PATH_SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$/;
function referenceIsValidPath(path: string): boolean {
  if (!path.startsWith('/') || path.length > 512) return false;
  return path
    .slice(1)
    .split('/')
    .every((s) => PATH_SEGMENT.test(s));
}

/** The former parser: the regex for every address. */
function referenceLocation(text: string) {
  const m =
    /^doyen:\/\/([A-Za-z0-9_.-]+)@(\[[^\]]+\]|[^:[\]/@#]+):(\d{1,5})(\/[^#]*)(?:#([A-Za-z0-9]+|\*))?$/.exec(
      text,
    );
  if (!m) return 'no-match';
  const [, cluster, rawHost, port, path, uid] = m as unknown as string[];
  if (!referenceIsValidPath(path!)) return 'bad-path';
  if (Number(port) > 65535) return 'bad-port';
  const host = rawHost!.startsWith('[') ? rawHost!.slice(1, -1) : rawHost!;
  return { cluster, node: { host, port: Number(port) }, path, uid };
}

function outcome(text: string) {
  try {
    return parseActorLocation(text);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidAddressError);
    const message = (error as Error).message;
    return message.includes('bad path')
      ? 'bad-path'
      : message.includes('port out of range')
        ? 'bad-port'
        : 'no-match';
  }
}

/** A seeded generator (mulberry32): the same cases every run. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ALPHABET = ['a', 'Z', '9', '_', '-', '.', '/', '#', '@', ':', '*', ' ', '\n', 'é', '%', '[', ']'];

function randomPath(next: () => number): string {
  const length = Math.floor(next() * 12);
  let path = next() < 0.9 ? '/' : '';
  for (let i = 0; i < length; i++) path += ALPHABET[Math.floor(next() * ALPHABET.length)];
  return path;
}

describe('isValidPath in one pass', () => {
  it.each([
    '/user/a',
    '/temp/ask-1z',
    '/system/temp/ask-9',
    '/',
    '//a',
    '/a/',
    '/a//b',
    '/.a',
    '/a.',
    '/a/.b',
    '/-a_b.c',
    'user/a',
    '',
    `/${'a'.repeat(64)}`,
    `/${'a'.repeat(65)}`,
    `/a.${'b'.repeat(62)}`,
    `/a.${'b'.repeat(63)}`,
    `/${'abcdefgh/'.repeat(57)}x`,
    '/a\n',
    '/é',
  ])('%j as the regex says', (path) => {
    expect(isValidPath(path)).toBe(referenceIsValidPath(path));
  });

  it('agrees with the regex on 20,000 seeded random paths', () => {
    const next = random(29);
    let valid = 0;
    for (let i = 0; i < 20_000; i++) {
      const path = randomPath(next);
      const expected = referenceIsValidPath(path);
      if (isValidPath(path) !== expected)
        expect({ path, valid: isValidPath(path) }).toEqual({ path, valid: expected });
      if (expected) valid++;
    }
    // the cases reach both answers (the comparison is not vacuous)
    expect(valid).toBeGreaterThan(500);
    expect(valid).toBeLessThan(19_000);
  });
});

describe('an address after the node parsed last', () => {
  const prefixes = [
    'doyen://c@127.0.0.1:7002',
    'doyen://c@127.0.0.1:700',
    'doyen://c@[::1]:7002',
    'doyen://c.x@host-1:1',
    'doyen://c@127.0.0.1:99999',
    'doyen://c@h',
    'doyen://@h:1',
  ];
  const suffixes = ['', '#u1', '#*', '#', '#u#1', '#u 1', '#**', '#é', '/x#u', ':1/a#u'];

  it('parses as the regex does, in every order of prefixes, paths and uids (seeded)', () => {
    const next = random(38);
    let parsed = 0;
    for (let i = 0; i < 20_000; i++) {
      const prefix = prefixes[Math.floor(next() * prefixes.length)]!;
      const path = next() < 0.5 ? `/temp/ask-${i.toString(36)}` : randomPath(next);
      const suffix = next() < 0.5 ? '#u1' : suffixes[Math.floor(next() * suffixes.length)]!;
      const text = prefix + path + suffix;
      const expected = referenceLocation(text);
      const actual = outcome(text);
      if (JSON.stringify(actual) !== JSON.stringify(expected))
        expect({ text, actual }).toEqual({ text, expected });
      if (typeof expected === 'object') parsed++;
    }
    expect(parsed).toBeGreaterThan(2000);
  });

  it('a run of reply addresses from one node: each its own path and uid, and objects of its own', () => {
    const a = parseActorAddress('doyen://c@127.0.0.1:7002/temp/ask-1#u1');
    const b = parseActorAddress('doyen://c@127.0.0.1:7002/temp/ask-2#u2');
    expect(a).toEqual({
      cluster: 'c',
      node: { host: '127.0.0.1', port: 7002, uid: 'u1' },
      path: '/temp/ask-1',
    });
    expect(b).toEqual({
      cluster: 'c',
      node: { host: '127.0.0.1', port: 7002, uid: 'u2' },
      path: '/temp/ask-2',
    });
    expect(b.node).not.toBe(a.node);
    // what follows the known prefix is still checked: a bad path, a missing or malformed uid
    expect(() => parseActorAddress('doyen://c@127.0.0.1:7002/temp/../x#u1')).toThrow(/bad path/);
    expect(() => parseActorAddress('doyen://c@127.0.0.1:7002/temp/x')).toThrow(InvalidAddressError);
    expect(() => parseActorAddress('doyen://c@127.0.0.1:7002/temp/x#u-1')).toThrow(InvalidAddressError);
    // a longer port with the same beginning is another node
    parseActorAddress('doyen://c@h:700/temp/x#u1');
    expect(parseActorAddress('doyen://c@h:7002/temp/x#u1').node.port).toBe(7002);
  });
});
