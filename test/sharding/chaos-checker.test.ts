import { describe, expect, it } from 'vitest';
import {
  type ChaosEvidence,
  type ChaosLine,
  checkChaosRun,
  describeViolations,
} from '../../bench/lib/chaos-sharding-checker.js';

/**
 * The sharding chaos runner's checker on synthetic logs: a clean log passes, and each violation
 * it exists for (an overlap, a duplicate, a gap, a reorder, an unreachable entity) is caught, so
 * a clean chaos run cannot pass because the checker looks at nothing.
 */

const T0 = 1_800_000_000_000;
const at = (ms: number) => T0 + ms;

const activated = (
  proc: string,
  incarnation: string,
  entityId: string,
  t: number,
  activation = 1,
): ChaosLine => ({
  proc,
  json: {
    event: 'sharding.activated',
    entityType: 'counter',
    entityId,
    incarnation,
    activation,
    time: at(t),
  },
});
const passivated = (
  proc: string,
  incarnation: string,
  entityId: string,
  t: number,
  activation = 1,
): ChaosLine => ({
  proc,
  json: {
    event: 'sharding.passivated',
    entityType: 'counter',
    entityId,
    incarnation,
    activation,
    time: at(t),
  },
});
const sent = (entityId: string, seq: number, t: number, probe = false): ChaosLine => ({
  proc: 'sender.p1',
  json: { event: 'chaos.sent', entityId, from: 'sender', seq, probe, time: at(t) },
});
const acked = (entityId: string, seq: number, t: number): ChaosLine => ({
  proc: 'sender.p1',
  json: { event: 'chaos.acked', entityId, seq, time: at(t) },
});
const received = (proc: string, entityId: string, seq: number, t: number): ChaosLine => ({
  proc,
  json: { event: 'chaos.received', entityId, from: 'sender', seq, incarnation: 'u1', time: at(t) },
});
const probeDone: ChaosLine = { proc: 'sender.p1', json: { event: 'chaos.probe-done', time: at(9_000) } };

/** c-1 on n1, moved (planned) to n2 at 1000 ms; three messages and a probe, all delivered in order. */
function cleanLines(): ChaosLine[] {
  return [
    activated('n1.p1', 'u1', 'c-1', 10),
    sent('c-1', 1, 100),
    received('n1.p1', 'c-1', 1, 101),
    acked('c-1', 1, 102),
    sent('c-1', 2, 500),
    received('n1.p1', 'c-1', 2, 501),
    acked('c-1', 2, 502),
    passivated('n1.p1', 'u1', 'c-1', 1_000),
    activated('n2.p1', 'u2', 'c-1', 1_001),
    sent('c-1', 3, 1_500),
    received('n2.p1', 'c-1', 3, 1_501),
    acked('c-1', 3, 1_502),
    sent('c-1', 4, 8_000, true),
    received('n2.p1', 'c-1', 4, 8_001),
    acked('c-1', 4, 8_002),
    probeDone,
  ];
}

function evidence(lines: ChaosLine[], patch: Partial<ChaosEvidence> = {}): ChaosEvidence {
  return { lines, fates: [], faults: [], pauses: [], until: at(10_000), askTimeoutMs: 5_000, ...patch };
}

const rules = (e: ChaosEvidence) => checkChaosRun(e).violations.map((v) => v.rule);

describe('the sharding chaos checker', () => {
  it('passes a clean log (a planned move, every message once and in order, the probe answered)', () => {
    const verdict = checkChaosRun(evidence(cleanLines()));
    expect(verdict.violations, describeViolations(verdict.violations)).toEqual([]);
    expect(verdict.figures).toMatchObject({
      activations: 2,
      sent: 4,
      received: 4,
      probed: 1,
      probeAnswered: 1,
    });
  });

  it('catches an overlap: c-1 activated on n2 before n1 passivated it', () => {
    const lines = cleanLines().map((l) =>
      l.json.event === 'sharding.passivated' ? passivated('n1.p1', 'u1', 'c-1', 1_200) : l,
    );
    const verdict = checkChaosRun(evidence(lines));
    expect(verdict.violations.map((v) => v.rule)).toEqual(['overlap']);
    expect(verdict.violations[0]!.detail).toContain('both active for 199 ms');
  });

  it("ends an activation at its process's kill and at its incarnation's restart: no overlap then", () => {
    const withoutStop = cleanLines().filter((l) => l.json.event !== 'sharding.passivated');
    expect(rules(evidence(withoutStop))).toEqual(['overlap']);
    expect(
      rules(evidence(withoutStop, { fates: [{ node: 'n1.p1', kind: 'killed', t: at(1_000) }] })),
    ).toEqual([]);
    const restarted = [
      ...withoutStop,
      { proc: 'n1.p1', json: { event: 'node.restart', uid: 'u1', time: at(900) } },
    ];
    expect(rules(evidence(restarted))).toEqual([]);
  });

  it('reports an overlap with a frozen older side apart, unless it handled a message after waking', () => {
    const lines = cleanLines().map((l) =>
      l.json.event === 'sharding.passivated' ? passivated('n1.p1', 'u1', 'c-1', 3_000) : l,
    );
    const pauses = [{ proc: 'n1.p1', stoppedAt: at(800), continuedAt: at(2_990) }];
    const frozen = checkChaosRun(evidence(lines, { pauses }));
    expect(frozen.violations).toEqual([]);
    expect(frozen.figures.frozenOverlaps).toBe(1);
    // the woken n1 delivers a message to its stale activation: a real double activation
    const acted = [...lines, received('n1.p1', 'c-1', 9, 2_995)];
    expect(rules(evidence(acted, { pauses }))).toContain('overlap');
  });

  it('reports apart an older side that woke before the newer began and was stopped by its lease loss having handled nothing since', () => {
    // n1 frozen 600–950 with c-1 active; n2 activates it at 1001; the woken n1's lease-lost stop at 1010
    const stop = passivated('n1.p1', 'u1', 'c-1', 1_010);
    const onLeaseLoss: ChaosLine = { ...stop, json: { ...stop.json, reason: 'lease-lost' } };
    const lines = cleanLines().map((l) => (l.json.event === 'sharding.passivated' ? onLeaseLoss : l));
    const pauses = [{ proc: 'n1.p1', stoppedAt: at(600), continuedAt: at(950) }];
    const woke = checkChaosRun(evidence(lines, { pauses }));
    expect(woke.violations, describeViolations(woke.violations)).toEqual([]);
    expect(woke.figures.frozenOverlaps).toBe(1);
    expect(woke.figures.frozenWokeOverlaps).toBe(1);
    // still caught: the woken n1 handled a message of c-1 after SIGCONT, before its stop
    const acted = checkChaosRun(evidence([...lines, received('n1.p1', 'c-1', 9, 960)], { pauses }));
    expect(acted.violations.map((v) => v.rule)).toContain('overlap');
    expect(acted.violations.find((v) => v.rule === 'overlap')!.detail).toContain(
      'handled a message after waking',
    );
    // caught since the entity gate (session 38): the woken n1 handled a message of ANOTHER entity
    // before its stop (the gates stop every partition before any entity processes anything)
    const other = [...lines, activated('n1.p1', 'u1', 'c-2', 20), received('n1.p1', 'c-2', 1, 960)];
    expect(rules(evidence(other, { pauses }))).toContain('overlap');
    // not at the stop's own ms once logged after it (a later activation's message)
    const after = [...lines, activated('n1.p1', 'u1', 'c-2', 20), received('n1.p1', 'c-2', 1, 1_010)];
    expect(rules(evidence(after, { pauses })).filter((r) => r === 'overlap')).toEqual([]);
    // still caught: it ended otherwise than by its lease loss (a hand-off), or was never frozen
    const handedOff: ChaosLine = { ...stop, json: { ...stop.json, reason: 'hand-off' } };
    const notLeaseLoss = lines.map((l) => (l === onLeaseLoss ? handedOff : l));
    expect(rules(evidence(notLeaseLoss, { pauses }))).toEqual(['overlap']);
    expect(rules(evidence(lines))).toEqual(['overlap']);
    // still caught: the pause began before the older activation (it was not active while frozen)
    const before = [{ proc: 'n1.p1', stoppedAt: at(0), continuedAt: at(5) }];
    expect(rules(evidence(lines, { pauses: before }))).toEqual(['overlap']);
  });

  it('catches a duplicate: one seq received on two nodes', () => {
    expect(rules(evidence([...cleanLines(), received('n2.p1', 'c-1', 2, 1_600)]))).toEqual(['duplicate']);
  });

  it('catches a gap: a message lost in a planned move, excused only during an unplanned fault', () => {
    const lines = cleanLines().filter((l) => !(l.json.event === 'chaos.received' && l.json.seq === 2));
    expect(rules(evidence(lines))).toEqual(['lost']);
    const planned = [{ what: 'leave n1', planned: true, start: at(400), end: at(1_100) }];
    expect(rules(evidence(lines, { faults: planned }))).toEqual(['lost']);
    const crash = [{ what: 'kill -9 n1', planned: false, start: at(1_400), end: at(3_000) }];
    const verdict = checkChaosRun(evidence(lines, { faults: crash }));
    expect(verdict.violations).toEqual([]);
    expect(verdict.figures.lostInFaults).toBe(1);
    // what the rule checks: the load's sends outside excused windows (seq 1 only: seq 2 and 3 lie
    // in the crash's window from its in-flight slack on; the probe is counted apart)
    expect(checkChaosRun(evidence(lines)).figures.lossChecked).toBe(3);
    expect(verdict.figures.lossChecked).toBe(1);
  });

  it("reports a loss apart when the entity stopped on its node's owner-lease loss after the send", () => {
    const lines = cleanLines().filter((l) => !(l.json.event === 'chaos.received' && l.json.seq === 3));
    expect(rules(evidence(lines))).toEqual(['lost']);
    const leaseLost: ChaosLine = { proc: 'n2.p1', json: { event: 'sharding.lease-lost', time: at(1_600) } };
    const verdict = checkChaosRun(evidence([...lines, leaseLost]));
    expect(verdict.violations).toEqual([]);
    expect(verdict.figures.lostOnLeaseLoss).toHaveLength(1);
    // a lease lost elsewhere excuses nothing
    expect(rules(evidence([...lines, { ...leaseLost, proc: 'n1.p1' }]))).toEqual(['lost']);
  });

  it('catches a reorder: seq 2 delivered after seq 3 from the same sender', () => {
    const lines = cleanLines().map((l) =>
      l.json.event === 'chaos.received' && l.json.seq === 2 ? received('n2.p1', 'c-1', 2, 1_600) : l,
    );
    expect(rules(evidence(lines))).toEqual(['reorder']);
  });

  it('catches an entity unreachable after healing, and a probe that never ran', () => {
    const unanswered = cleanLines().filter((l) => !(l.json.event === 'chaos.acked' && l.json.seq === 4));
    expect(rules(evidence(unanswered))).toEqual(['unreachable']);
    const noProbe = cleanLines().filter((l) => l.json.event !== 'chaos.probe-done');
    expect(rules(evidence(noProbe))).toEqual(['unreachable']);
  });
});
