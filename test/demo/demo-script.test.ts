import { describe, expect, it } from 'vitest';
import type { CheckResult, Condition } from '../../apps/partition-demo/src/conditions.js';
import {
  parseDuration,
  parseScript,
  runScript,
  ScriptError,
  type ScriptTarget,
} from '../../apps/partition-demo/src/script.js';

describe('demo script parser', () => {
  it('parses every command, comments and blank lines, with line numbers', () => {
    const lines = parseScript(
      [
        '# a tour',
        'wait 3s',
        'wait-until converged 5 20s',
        '',
        'kill athens   # crash it',
        'restart athens',
        'pause byzantium 2s',
        'pause cyrene',
        'resume cyrene',
        'add',
        'remove cyrene',
        'partition athens,byzantium | cyrene, delphi,ephesus',
        'split',
        'heal',
        'expect coordinator byzantium',
        'expect members 4',
        'expect singleton-on byzantium 5s',
        'expect partitions-balanced',
        'expect status athens down',
        'echo done',
      ].join('\n'),
    );
    expect(lines.map((l) => l.line)).toEqual([
      2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
    ]);
    expect(lines.map((l) => l.step)).toEqual([
      { op: 'wait', ms: 3000 },
      { op: 'wait-until', condition: { kind: 'converged', count: 5 }, timeoutMs: 20_000 },
      { op: 'kill', node: 'athens' },
      { op: 'restart', node: 'athens' },
      { op: 'pause', node: 'byzantium', ms: 2000 },
      { op: 'pause', node: 'cyrene', ms: undefined },
      { op: 'resume', node: 'cyrene' },
      { op: 'add' },
      { op: 'remove', node: 'cyrene' },
      {
        op: 'partition',
        sides: [
          ['athens', 'byzantium'],
          ['cyrene', 'delphi', 'ephesus'],
        ],
      },
      { op: 'split' },
      { op: 'heal' },
      { op: 'expect', condition: { kind: 'coordinator', node: 'byzantium' }, timeoutMs: 10_000 },
      // a bare number ends the condition; a timeout needs a unit
      { op: 'expect', condition: { kind: 'members', count: 4 }, timeoutMs: 10_000 },
      { op: 'expect', condition: { kind: 'singleton-on', node: 'byzantium' }, timeoutMs: 5000 },
      { op: 'expect', condition: { kind: 'partitions-balanced' }, timeoutMs: 10_000 },
      { op: 'expect', condition: { kind: 'status', node: 'athens', status: 'down' }, timeoutMs: 10_000 },
      { op: 'echo', text: 'done' },
    ]);
  });

  it('durations', () => {
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('1.5s')).toBe(1500);
    expect(parseDuration('2m')).toBe(120_000);
    expect(parseDuration('3')).toBe(3000);
    expect(parseDuration('soon')).toBeUndefined();
  });

  it('reports every bad line with its number and what is wrong', () => {
    const source = [
      'wait 3s',
      'kil athens',
      'wait forever',
      'expect members four',
      'partition athens | athens',
      'expect coordinator',
      'wait-until sunrise 5s',
      'add cyrene',
    ].join('\n');
    let error: unknown;
    try {
      parseScript(source, 'tour.demo');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ScriptError);
    const e = error as ScriptError;
    expect(e.errors.map((x) => x.line)).toEqual([2, 3, 4, 5, 6, 7, 8]);
    const lines = e.message.split('\n');
    expect(lines[0]).toBe(
      'tour.demo:2: kil athens: unknown command "kil"; commands: wait, wait-until, expect, kill, restart, remove, resume, pause, add, split, heal, partition, echo, carts',
    );
    expect(lines[1]).toBe('tour.demo:3: wait forever: usage: wait DURATION (e.g. wait 3s)');
    expect(lines[2]).toMatch(/^tour\.demo:4: expect members four: members needs a number of nodes/);
    expect(lines[3]).toBe('tour.demo:5: partition athens | athens: athens is on both sides');
    expect(lines[4]).toMatch(/^tour\.demo:6: expect coordinator: coordinator needs a node name/);
    expect(lines[5]).toMatch(
      /^tour\.demo:7: wait-until sunrise 5s: unknown condition "sunrise"; conditions: /,
    );
    expect(lines[6]).toBe('tour.demo:8: add cyrene: add takes no arguments');
  });
});

describe('demo script runner', () => {
  function fakeTarget(checks: (c: Condition, calls: string[]) => CheckResult) {
    const calls: string[] = [];
    const target: ScriptTarget = {
      kill: async (n) => void calls.push(`kill ${n}`),
      restart: async (n) => void calls.push(`restart ${n}`),
      remove: async (n) => {
        if (n === 'nobody') throw new Error('no node called nobody');
        calls.push(`remove ${n}`);
      },
      pause: async (n, ms) => void calls.push(`pause ${n} ${ms}`),
      resume: async (n) => void calls.push(`resume ${n}`),
      add: async () => {
        calls.push('add');
        return 'fayum';
      },
      partition: async (a, b) => void calls.push(`partition ${a} | ${b}`),
      split: async () => void calls.push('split'),
      heal: async () => void calls.push('heal'),
      check: (c) => checks(c, calls),
    };
    return { target, calls };
  }

  it('runs the steps in order and counts the expectations', async () => {
    const { target, calls } = fakeTarget((c) => ({ ok: true, detail: `${c.kind} holds` }));
    const log: string[] = [];
    const r = await runScript(
      parseScript('kill athens\nexpect coordinator byzantium\npartition a,b | c\nheal\nadd\npause b 1ms'),
      target,
      { log: (t) => log.push(t) },
    );
    expect(r).toEqual({ ok: true, expects: 1, steps: 6, failure: undefined });
    expect(calls).toEqual(['kill athens', 'partition a,b | c', 'heal', 'add', 'pause b 1']);
    expect(log).toContain('line 2: expect coordinator byzantium');
  });

  it('waits for a condition, and fails with the file, line and what holds instead', async () => {
    let polls = 0;
    const { target, calls } = fakeTarget((c) =>
      c.kind === 'members'
        ? { ok: ++polls >= 3, detail: `polled ${polls}` }
        : { ok: false, detail: 'coordinator athens (5 of 5 nodes agree)' },
    );
    const r = await runScript(
      parseScript('wait-until members 4 1s\nexpect coordinator cyrene 50ms\nkill athens', 'x.demo'),
      target,
      { file: 'x.demo', pollMs: 5 },
    );
    expect(polls).toBe(3);
    expect(r.ok).toBe(false);
    expect(r.failure).toBe(
      'x.demo:2: expect coordinator cyrene 50ms: expected coordinator cyrene for 50 ms; now: coordinator athens (5 of 5 nodes agree)',
    );
    expect(calls).toEqual([]); // stopped at the failure
  });

  it('an action that throws fails the script at its line', async () => {
    const { target } = fakeTarget(() => ({ ok: true, detail: '' }));
    const r = await runScript(parseScript('\n\nremove nobody', 'y.demo'), target, { file: 'y.demo' });
    expect(r.failure).toBe('y.demo:3: remove nobody: no node called nobody');
  });
});
