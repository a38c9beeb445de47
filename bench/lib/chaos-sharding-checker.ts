// The sharding chaos runner's witness: a pure function of what the nodes logged, what the runner
// saw happen to their processes (kill -9, exits, SIGSTOP/SIGCONT) and the fault windows it played.
// It trusts nothing the nodes say about themselves beyond their log lines, all on this machine's
// clock. The rules (each a `rule` of a violation):
//   overlap      two activations of one entity id alive at one instant (testkit's instance-overlap
//                checker over `sharding.activated` / `sharding.passivated` lines: an activation ends
//                at its passivation, at its incarnation's end (`node.restart` with its uid) or at
//                its process's death). An overlap whose older side was frozen (SIGSTOP) from before
//                the newer activation began, and that handled no message for the id after it began,
//                is reported apart as `frozen` (a stopped process runs nothing), not as a violation.
//                So is one whose older side was frozen while active, woke (SIGCONT) before the newer
//                began, and ended at its lease-lost stop (`sharding.passivated`, reason `lease-lost`)
//                with its NODE having handled no message of ANY entity from the wake to that stop:
//                the region reads the owner lease by the clock before it delivers anything and every
//                entity reads it before each turn or event (queued messages, due timers), so the
//                first thing a woken node past its lease does is stop every partition at once; such
//                a stale activation only awaits its stop and acts on nothing (`frozenWokeOverlaps`,
//                counted in `frozenOverlaps` too).
//   duplicate    one (entity, sender, seq) received more than once, anywhere.
//   reorder      per (entity, sender), a seq received after a higher one (time order across nodes,
//                log order within one).
//   lost         a message sent and never received, unless an unplanned fault (kill -9, pause,
//                partition) was under way when it was sent (from IN_FLIGHT_SLACK_MS before the
//                fault began to the moment the cluster was whole again), or the cluster downed a
//                member on its own then (a stalled event loop on a loaded machine: from the first
//                `member.unreachable` about it to its `node.restart`): planned moves (joins,
//                graceful leaves) and quiet periods lose nothing. A message lost because the node
//                running its entity lost its own owner lease after the send (a stall past the lease:
//                the keeper stops every entity at once, mailboxes and all) is reported apart
//                (`lostOnLeaseLoss`), not as a violation.
//   unreachable  an entity that answered none of its probes (sent after healing and a quiet
//                period, up to PROBE_ROUNDS tries), or no probe at all.

import { ACTIVATED_EVENT, PASSIVATED_EVENT } from '../../packages/sharding/src/region/entity-log-lines.js';
import {
  findInstanceOverlaps,
  type InstanceInterval,
  type InstanceLogLine,
  type InstanceOverlap,
  instanceIntervals,
  type ProcessFate,
  SINGLETON_STARTED_EVENT,
  SINGLETON_STOPPED_EVENT,
} from '../../packages/testkit/src/instance-overlaps.js';
import {
  CHAOS_ACKED_EVENT,
  CHAOS_PROBE_DONE_EVENT,
  CHAOS_RECEIVED_EVENT,
  CHAOS_SENT_EVENT,
} from './chaos-sharding-protocol.js';

// a partition's stops are one line: read through perEntityLines (chaos-sharding-run.ts `lines`)
export { ACTIVATED_EVENT, PASSIVATED_EVENT };
/** The keeper's own owner lease ran out: it stops every entity at once (keeper-decisions.ts). */
export const LEASE_LOST_EVENT = 'sharding.lease-lost';
/** The `reason` of a `sharding.passivated` line when the node's owner lease was lost (entity-hosting.ts). */
export const LEASE_LOST_REASON = 'lease-lost';
/** Logged by a node downed and restarting in place, with the ending incarnation's `uid`: its entities stop. */
export const RESTART_EVENT = 'node.restart';

/** A message sent this long before an unplanned fault began may still have been in flight through it. */
export const IN_FLIGHT_SLACK_MS = 1_000;

/** One parsed JSON log line of process `proc` (`n2.p1`: slot 2's first process). */
export interface ChaosLine {
  readonly proc: string;
  readonly json: Record<string, unknown>;
}

/** A fault as played: unplanned ones (kill, pause, partition, one-way) excuse losses in their window. */
export interface ChaosFaultWindow {
  readonly what: string;
  readonly planned: boolean;
  readonly start: number;
  readonly end: number;
}

/** A process frozen by SIGSTOP from `stoppedAt` to `continuedAt` (wall-clock ms). */
export interface ChaosPause {
  readonly proc: string;
  readonly stoppedAt: number;
  readonly continuedAt: number;
}

export interface ChaosEvidence {
  readonly lines: readonly ChaosLine[];
  readonly fates: readonly ProcessFate[];
  readonly faults: readonly ChaosFaultWindow[];
  readonly pauses: readonly ChaosPause[];
  /** When the run's observation ended (open activations count to here). */
  readonly until: number;
  /** The sender's ask timeout: a message's deadline is its send time plus this. */
  readonly askTimeoutMs: number;
}

export type ChaosRule = 'overlap' | 'duplicate' | 'reorder' | 'lost' | 'unreachable';

export interface ChaosViolation {
  readonly rule: ChaosRule;
  readonly detail: string;
}

export interface ChaosVerdict {
  readonly violations: readonly ChaosViolation[];
  readonly figures: {
    readonly activations: number;
    readonly sent: number;
    readonly acked: number;
    readonly received: number;
    /** Messages never received while an unplanned fault was under way (allowed). */
    readonly lostInFaults: number;
    /**
     * Load messages (not probes) sent outside every excused window: their loss would be a
     * violation. How much of a run the `lost` rule really checks (the quiet periods, the planned
     * moves and the hand-backs after each fault).
     */
    readonly lossChecked: number;
    /**
     * Messages lost outside every fault window because the node running their entity lost its own
     * owner lease after they were sent (no crash, no downing: a stall past the lease on a loaded
     * machine); the lease's loss stops entities with what their mailboxes hold. Reported apart.
     */
    readonly lostOnLeaseLoss: readonly string[];
    /** Overlaps whose older side was frozen throughout and acted on nothing after (reported apart). */
    readonly frozenOverlaps: number;
    /**
     * Of those, the ones whose older side woke before the newer began and was stopped by its lease
     * loss, having handled no message for the id since it woke.
     */
    readonly frozenWokeOverlaps: number;
    readonly probed: number;
    readonly probeAnswered: number;
  };
  /** Every overlap, frozen ones included, for the report. */
  readonly overlaps: readonly InstanceOverlap[];
}

const iso = (t: number) => new Date(t).toISOString().slice(11, 23);
const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const str = (v: unknown) => (typeof v === 'string' || typeof v === 'number' ? String(v) : undefined);

/** The instance key of an activation: process and incarnation (a restart in place is a new one). */
const instanceOf = (proc: string, incarnation: string) => `${proc}/${incarnation}`;

/**
 * Activation lines as the instance-overlap checker reads them (entity id for the singleton, the
 * process's incarnation for the node), the ends of incarnations as fates.
 */
function activationEvidence(
  lines: readonly ChaosLine[],
  fates: readonly ProcessFate[],
): { lines: InstanceLogLine[]; fates: ProcessFate[]; activations: number } {
  const out: InstanceLogLine[] = [];
  const ends: ProcessFate[] = [];
  const incarnations = new Map<string, Set<string>>();
  let activations = 0;
  for (const { proc, json } of lines) {
    const event = json.event;
    const time = num(json.time);
    if (time === undefined) continue;
    if (event === ACTIVATED_EVENT || event === PASSIVATED_EVENT) {
      const incarnation = str(json.incarnation);
      const entityId = str(json.entityId);
      if (incarnation === undefined || entityId === undefined) continue;
      const node = instanceOf(proc, incarnation);
      let seen = incarnations.get(proc);
      if (!seen) incarnations.set(proc, (seen = new Set()));
      seen.add(incarnation);
      if (event === ACTIVATED_EVENT) activations++;
      out.push({
        node,
        line: {
          event: event === ACTIVATED_EVENT ? SINGLETON_STARTED_EVENT : SINGLETON_STOPPED_EVENT,
          singleton: `${str(json.entityType) ?? ''}/${entityId}`,
          time,
        },
      });
    } else if (event === RESTART_EVENT) {
      const uid = str(json.uid);
      if (uid !== undefined) ends.push({ node: instanceOf(proc, uid), kind: 'exited', t: time });
    }
  }
  // a process's death ends every incarnation it ran
  for (const f of fates)
    for (const incarnation of incarnations.get(f.node) ?? [])
      ends.push({ ...f, node: instanceOf(f.node, incarnation) });
  return { lines: out, fates: ends, activations };
}

/**
 * The older side of an overlap was frozen (SIGSTOP) while active, woke (SIGCONT) before the newer
 * began and ended at its lease-lost stop: 'idle' if its node handled no message of any entity from
 * the wake to that stop (by time, then log order: the lease guards stop every partition in one
 * task before any entity processes anything, so the stop comes first), 'acted' if it handled one,
 * undefined if the case does not apply (another rule decides).
 */
function wokeThenStoppedIdle(
  evidence: ChaosEvidence,
  receipts: readonly Receipt[],
  older: InstanceInterval,
  newer: InstanceInterval,
  entityId: string,
): 'idle' | 'acted' | undefined {
  const [proc, incarnation] = older.node.split('/') as [string, string];
  // the latest wake before the newer began, of a pause that began while the older was active
  const pause = evidence.pauses
    .filter((p) => p.proc === proc && p.stoppedAt >= older.start && p.continuedAt <= newer.start)
    .reduce<ChaosPause | undefined>(
      (a, p) => (a === undefined || p.continuedAt > a.continuedAt ? p : a),
      undefined,
    );
  if (pause === undefined || older.end < pause.continuedAt) return undefined;
  // its end is its own lease-lost stop, logged by that incarnation after the wake
  const stopAt = evidence.lines.findIndex(
    ({ proc: p, json }) =>
      p === proc &&
      json.event === PASSIVATED_EVENT &&
      json.reason === LEASE_LOST_REASON &&
      str(json.incarnation) === incarnation &&
      str(json.entityId) === entityId &&
      json.time === older.end,
  );
  if (stopAt < 0) return undefined;
  const acted = receipts.some(
    (r) =>
      r.proc === proc &&
      r.t >= pause.continuedAt &&
      (r.t < older.end || (r.t === older.end && (r.entityId === entityId || r.i < stopAt))),
  );
  return acted ? 'acted' : 'idle';
}

interface Receipt {
  readonly proc: string;
  readonly entityId: string;
  readonly from: string;
  readonly seq: number;
  readonly t: number;
  /** Position in the input: log order within one process at one ms. */
  readonly i: number;
}

/** How far before an unexplained downing the first sign of it is looked for (`member.unreachable`). */
export const DOWNING_LOOKBACK_MS = 60_000;

/**
 * Unplanned faults the cluster had on its own (a loaded machine stalls event loops past the
 * detector): every incarnation downed and restarting in place (`node.restart`) is a crash as its
 * senders see it, from the first `member.unreachable` about it anyone logged (within
 * DOWNING_LOOKBACK_MS) to its restart.
 */
export function downings(lines: readonly ChaosLine[]): ChaosFaultWindow[] {
  const windows: ChaosFaultWindow[] = [];
  const unreachable: { uid: string; t: number }[] = [];
  for (const { json } of lines) {
    const member = json.member as Record<string, unknown> | undefined;
    const t = num(json.time);
    if (json.event === 'member.unreachable' && t !== undefined && typeof member?.uid === 'string')
      unreachable.push({ uid: member.uid, t });
  }
  for (const { proc, json } of lines) {
    const t = num(json.time);
    const uid = str(json.uid);
    if (json.event !== RESTART_EVENT || t === undefined || uid === undefined) continue;
    const first = unreachable
      .filter((u) => u.uid === uid && u.t <= t && u.t >= t - DOWNING_LOOKBACK_MS)
      .reduce((a, u) => Math.min(a, u.t), t);
    windows.push({
      what: `${proc} (incarnation ${uid}) downed and restarted in place (${String(json.reason ?? '')})`,
      planned: false,
      start: first,
      end: t + IN_FLIGHT_SLACK_MS,
    });
  }
  return windows;
}

export function checkChaosRun(evidence: ChaosEvidence): ChaosVerdict {
  const violations: ChaosViolation[] = [];
  const receipts: Receipt[] = [];
  const sent: { entityId: string; from: string; seq: number; t: number; probe: boolean }[] = [];
  const acked = new Set<string>();
  let probeDone = false;
  evidence.lines.forEach(({ proc, json }, i) => {
    const t = num(json.time);
    if (t === undefined) return;
    const entityId = str(json.entityId);
    const seq = num(json.seq);
    if (json.event === CHAOS_RECEIVED_EVENT && entityId !== undefined && seq !== undefined)
      receipts.push({ proc, entityId, from: str(json.from) ?? '', seq, t, i });
    else if (json.event === CHAOS_SENT_EVENT && entityId !== undefined && seq !== undefined)
      sent.push({ entityId, from: str(json.from) ?? '', seq, t, probe: json.probe === true });
    else if (json.event === CHAOS_ACKED_EVENT && entityId !== undefined && seq !== undefined)
      acked.add(`${entityId}#${seq}`);
    else if (json.event === CHAOS_PROBE_DONE_EVENT) probeDone = true;
  });

  // overlap
  const act = activationEvidence(evidence.lines, evidence.fates);
  const overlaps = findInstanceOverlaps(instanceIntervals(act.lines, act.fates, evidence.until));
  let frozenOverlaps = 0;
  let frozenWokeOverlaps = 0;
  for (const o of overlaps) {
    const [older, newer] = o.a.start <= o.b.start ? [o.a, o.b] : [o.b, o.a];
    const olderProc = older.node.split('/')[0]!;
    const end = Math.min(older.end, newer.end);
    const entityId = o.singleton.slice(o.singleton.indexOf('/') + 1);
    const frozen = evidence.pauses.some(
      (p) => p.proc === olderProc && p.stoppedAt <= newer.start && p.continuedAt >= newer.start,
    );
    const actedAfter = receipts.some(
      (r) => r.proc === olderProc && r.entityId === entityId && r.t >= newer.start && r.t <= end,
    );
    const woke = frozen ? undefined : wokeThenStoppedIdle(evidence, receipts, older, newer, entityId);
    const text =
      `${o.singleton}: ${older.node} [${iso(older.start)}–${iso(older.end)}] and ${newer.node} ` +
      `[${iso(newer.start)}–${iso(newer.end)}] both active for ${o.overlapMs} ms`;
    if (frozen && !actedAfter) frozenOverlaps++;
    else if (woke === 'idle') {
      frozenOverlaps++;
      frozenWokeOverlaps++;
    } else
      violations.push({
        rule: 'overlap',
        detail: `${text}${
          frozen
            ? ' (the older side was frozen, but handled a message after waking)'
            : woke === 'acted'
              ? ' (the older side was frozen, but its node handled a message after waking, before its lease-lost stop)'
              : ''
        }`,
      });
  }

  // duplicate and reorder
  const byKey = new Map<string, Receipt[]>();
  for (const r of receipts) {
    const key = `${r.entityId}|${r.from}`;
    const list = byKey.get(key);
    if (list) list.push(r);
    else byKey.set(key, [r]);
  }
  const received = new Set<string>();
  for (const [key, list] of byKey) {
    list.sort((x, y) => x.t - y.t || x.i - y.i);
    const counts = new Map<number, Receipt[]>();
    let highest: Receipt | undefined;
    for (const r of list) {
      received.add(`${r.entityId}#${r.seq}`);
      const same = counts.get(r.seq);
      if (same) {
        same.push(r);
        if (same.length === 2)
          violations.push({
            rule: 'duplicate',
            detail: `${key} seq ${r.seq} received ${same.map((x) => `on ${x.proc} at ${iso(x.t)}`).join(' and ')}`,
          });
        continue;
      }
      counts.set(r.seq, [r]);
      if (highest && r.seq < highest.seq)
        violations.push({
          rule: 'reorder',
          detail: `${key} seq ${r.seq} received on ${r.proc} at ${iso(r.t)}, after seq ${highest.seq} on ${highest.proc} at ${iso(highest.t)}`,
        });
      if (!highest || r.seq > highest.seq) highest = r;
    }
  }

  // lost
  const unplanned = [...evidence.faults.filter((f) => !f.planned), ...downings(evidence.lines)];
  let lostInFaults = 0;
  const excused = (t: number) => unplanned.some((f) => f.start - IN_FLIGHT_SLACK_MS <= t && f.end >= t);
  const lossChecked = sent.filter((m) => !m.probe && !excused(m.t)).length;
  const lostOnLeaseLoss: string[] = [];
  const leaseLost = evidence.lines.filter((l) => l.json.event === LEASE_LOST_EVENT);
  const activatedAt = evidence.lines
    .filter((l) => l.json.event === ACTIVATED_EVENT && typeof l.json.time === 'number')
    .sort((a, b) => (a.json.time as number) - (b.json.time as number));
  for (const m of sent) {
    if (received.has(`${m.entityId}#${m.seq}`)) continue;
    const deadline = m.t + evidence.askTimeoutMs;
    if (excused(m.t)) {
      lostInFaults++;
      continue;
    }
    // the entity ran on a node that lost its own owner lease after the send: it stopped the
    // entity at once, with what its mailbox held (a stall past the lease, as the design allows)
    const stalled = leaseLost.find((l) => {
      const t = l.json.time as number;
      if (t < m.t || t > deadline) return false;
      // where the entity ran at that moment: its latest activation before it
      let latest: ChaosLine | undefined;
      for (const a of activatedAt)
        if (a.json.entityId === m.entityId && (a.json.time as number) <= t) latest = a;
      return latest?.proc === l.proc;
    });
    if (stalled) {
      lostOnLeaseLoss.push(
        `${m.entityId} seq ${m.seq} sent at ${iso(m.t)}: ${stalled.proc} lost its owner lease at ${iso(stalled.json.time as number)}`,
      );
      continue;
    }
    violations.push({
      rule: 'lost',
      detail: `${m.entityId} seq ${m.seq} sent at ${iso(m.t)}${m.probe ? ' (probe)' : ''} never received${
        acked.has(`${m.entityId}#${m.seq}`) ? ' (yet acked)' : ''
      }; no unplanned fault under way from ${iso(m.t - IN_FLIGHT_SLACK_MS)} to its send (deadline ${iso(deadline)})`,
    });
  }

  // unreachable
  const probes = sent.filter((m) => m.probe);
  if (!probeDone || probes.length === 0)
    violations.push({ rule: 'unreachable', detail: 'the final probe did not run or did not finish' });
  const probeAnswered = new Set(
    probes.filter((m) => acked.has(`${m.entityId}#${m.seq}`)).map((m) => m.entityId),
  );
  const probeTried = new Map<string, string[]>();
  for (const m of probes)
    probeTried.set(m.entityId, [...(probeTried.get(m.entityId) ?? []), `seq ${m.seq} at ${iso(m.t)}`]);
  for (const [entityId, tries] of probeTried)
    if (!probeAnswered.has(entityId))
      violations.push({
        rule: 'unreachable',
        detail: `${entityId} answered none of its probes after healing (${tries.join(', ')})`,
      });

  return {
    violations,
    overlaps,
    figures: {
      activations: act.activations,
      sent: sent.length,
      acked: acked.size,
      received: receipts.length,
      lostInFaults,
      lossChecked,
      lostOnLeaseLoss,
      frozenOverlaps,
      frozenWokeOverlaps,
      probed: probeTried.size,
      probeAnswered: probeAnswered.size,
    },
  };
}

/** Violations grouped by rule, at most `perRule` lines each, for a failing run's report. */
export function describeViolations(violations: readonly ChaosViolation[], perRule = 10): string {
  const byRule = new Map<ChaosRule, string[]>();
  for (const v of violations) {
    const list = byRule.get(v.rule) ?? [];
    list.push(v.detail);
    byRule.set(v.rule, list);
  }
  return [...byRule]
    .map(
      ([rule, list]) =>
        `${rule} ×${list.length}:\n${list
          .slice(0, perRule)
          .map((d) => `  ${d}`)
          .join('\n')}${list.length > perRule ? `\n  … ${list.length - perRule} more` : ''}`,
    )
    .join('\n');
}
