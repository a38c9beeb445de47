/**
 * The conditions scripts wait for and expect, checked against an observation. Each check says
 * why it does not hold yet, so a failed expectation explains itself.
 */
import { memberKey } from '../../../packages/cluster/src/model/member.js';
import { ALLOCATOR, isFresh, type Observation, type ObservedNode } from './observe.js';

export type Condition =
  /** N running nodes all up, each seeing the same N up, reachable members, coordinator and table. */
  | { readonly kind: 'converged'; readonly count: number }
  /** The majority sees exactly N up, reachable members. */
  | { readonly kind: 'members'; readonly count: number }
  /** The majority's coordinator. */
  | { readonly kind: 'coordinator'; readonly node: string }
  /** The partition allocator runs on that node, and only there. */
  | { readonly kind: 'singleton-on'; readonly node: string }
  /** Every partition has an owner, every up member owns some, max - min <= 1. */
  | { readonly kind: 'partitions-balanced' }
  /** The node's member status in the majority view (`absent`: not listed). */
  | { readonly kind: 'status'; readonly node: string; readonly status: string };

export interface CheckResult {
  readonly ok: boolean;
  /** What holds now, in words: `coordinator is athens (5 of 5 nodes agree)`. */
  readonly detail: string;
}

export const STATUSES = ['up', 'joining', 'leaving', 'exiting', 'down', 'absent'] as const;

export function describeCondition(c: Condition): string {
  switch (c.kind) {
    case 'converged':
    case 'members':
      return `${c.kind} ${c.count}`;
    case 'coordinator':
    case 'singleton-on':
      return `${c.kind} ${c.node}`;
    case 'partitions-balanced':
      return c.kind;
    case 'status':
      return `status ${c.node} ${c.status}`;
  }
}

function coordinatorText(o: Observation): string {
  if (!o.coordinator) return 'no coordinator agreed';
  const split = o.others.length
    ? `; others: ${o.others.map((v) => `${v.name} (${v.votes})`).join(', ')}`
    : '';
  return `coordinator ${o.coordinator.name} (${o.coordinator.votes} of ${o.alive} nodes agree${split})`;
}

function upReachable(o: Observation) {
  const up = (o.reference?.members ?? []).filter((m) => m.status === 'up');
  return { up, unreachable: up.filter((m) => !m.reachable) };
}

export function check(
  c: Condition,
  nodes: readonly ObservedNode[],
  o: Observation,
  now = Date.now(),
): CheckResult {
  const known = (name: string) => nodes.some((n) => n.name === name);
  switch (c.kind) {
    case 'coordinator': {
      const ok = o.coordinator?.name === c.node && o.coordinator.majority;
      return { ok, detail: coordinatorText(o) };
    }
    case 'members': {
      const { up, unreachable } = upReachable(o);
      const ok = !!o.coordinator?.majority && up.length === c.count && unreachable.length === 0;
      const names = up.map((m) => m.name || m.address).join(', ');
      const bad = unreachable.length ? `, unreachable: ${unreachable.map((m) => m.name).join(', ')}` : '';
      const who = o.coordinator ? `the majority (${o.coordinator.votes} of ${o.alive})` : 'nobody';
      return { ok, detail: `${who} sees ${up.length} up [${names}]${bad}` };
    }
    case 'singleton-on': {
      if (!known(c.node)) return { ok: false, detail: `no node called ${c.node}` };
      if (o.missing.includes('/singletons')) return { ok: false, detail: 'GET /singletons answers 404' };
      const on = o.singletons.get(ALLOCATOR) ?? [];
      const ok = on.length === 1 && on[0] === c.node;
      return {
        ok,
        detail: on.length ? `${ALLOCATOR} runs on ${on.join(' and ')}` : `${ALLOCATOR} runs nowhere`,
      };
    }
    case 'partitions-balanced': {
      if (o.missing.includes('/partitions')) return { ok: false, detail: 'GET /partitions answers 404' };
      const b = o.balance;
      if (!b) return { ok: false, detail: 'no partition table yet' };
      const strays = b.strays.length ? `, owners not up: ${b.strays.join(', ')}` : '';
      return {
        ok: b.balanced,
        detail: `table v${b.version}: ${b.partitionCount} over ${b.members} up members, ${b.min}..${b.max} each, ${b.unassigned} unassigned${strays}`,
      };
    }
    case 'status': {
      if (!known(c.node)) return { ok: false, detail: `no node called ${c.node}` };
      const member = o.rows.get(c.node)?.member;
      const status = member?.status ?? 'absent';
      return { ok: status === c.status, detail: `${c.node} is ${status} in the majority view` };
    }
    case 'converged': {
      const alive = nodes.filter((n) => n.state !== 'exited');
      if (alive.length !== c.count) return { ok: false, detail: `${alive.length} nodes are running` };
      const silent = alive.filter((n) => !isFresh(n, now));
      if (silent.length)
        return { ok: false, detail: `no answer from ${silent.map((n) => n.name).join(', ')}` };
      const problems: string[] = [];
      const signature = (n: ObservedNode) => {
        const v = n.snapshot.cluster!;
        const up = v.members.filter((m) => m.status === 'up');
        if (v.status !== 'up') problems.push(`${n.name} is ${v.status}`);
        if (up.length !== c.count) problems.push(`${n.name} sees ${up.length} up`);
        const unreachable = up.filter((m) => !m.reachable);
        if (unreachable.length)
          problems.push(`${n.name} sees ${unreachable.map((m) => m.name).join(', ')} unreachable`);
        return `${v.coordinator}|${up.map(memberKey).sort().join(',')}`;
      };
      const signatures = new Set(alive.map(signature));
      if (problems.length) return { ok: false, detail: problems.slice(0, 4).join('; ') };
      if (signatures.size > 1) return { ok: false, detail: `views differ: ${coordinatorText(o)}` };
      if (!o.missing.includes('/singletons')) {
        const on = o.singletons.get(ALLOCATOR) ?? [];
        if (on.length !== 1) return { ok: false, detail: `${ALLOCATOR} runs on ${on.length} nodes` };
      }
      if (!o.missing.includes('/partitions')) {
        const versions = new Set(alive.map((n) => n.snapshot.partitions?.version));
        if (versions.size > 1)
          return { ok: false, detail: `partition tables differ: v${[...versions].join(', v')}` };
        if (o.balance && (o.balance.owners !== c.count || o.balance.unassigned > 0))
          return { ok: false, detail: `table v${o.balance.version} has ${o.balance.owners} owners` };
      }
      return { ok: true, detail: `${c.count} up, ${coordinatorText(o)}` };
    }
  }
}
