import type { MemberStatus } from '../model/member.js';

/** A member as the split-brain resolver sees it. */
export interface SbrMember {
  readonly key: string;
  /** `host:port` */
  readonly address: string;
  readonly age: number;
  readonly status: MemberStatus;
  readonly roles: readonly string[];
}

/**
 * What one side knows when it must decide: the last known membership (live members) and which
 * of them are unreachable from here, after indirectly connected members were set aside.
 */
export interface SbrView {
  readonly members: readonly SbrMember[];
  readonly unreachable: ReadonlySet<string>;
}

export type SbrDecisionKind =
  | 'down-unreachable'
  | 'down-reachable'
  | 'down-all'
  | 'down-indirectly-connected';

/** `host:port` ordered by host then numeric port: "the lowest address" of Akka's tie-break. */
export function compareAddress(a: string, b: string): number {
  const ia = a.lastIndexOf(':');
  const ib = b.lastIndexOf(':');
  const ha = a.slice(0, ia);
  const hb = b.slice(0, ib);
  if (ha !== hb) return ha < hb ? -1 : 1;
  return Number(a.slice(ia + 1)) - Number(b.slice(ib + 1));
}

export function withRole(members: readonly SbrMember[], role: string | undefined): SbrMember[] {
  return role ? members.filter((m) => m.roles.includes(role)) : [...members];
}

/** Members counted as fully in: Joining members do not count on our side (they may not be Up anywhere yet). */
export function isCounted(m: SbrMember): boolean {
  return m.status === 'up' || m.status === 'leaving' || m.status === 'exiting';
}
