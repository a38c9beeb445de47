import { formatNodeAddress, type NodeAddress, sameNode } from '@doyen/core';

/** One seed a failed join attempt asked, and why it did not answer as far as this node knows. */
export interface SeedFailure {
  readonly seed: string;
  /** The wire's reason (`connect ECONNREFUSED 10.0.0.7:25520`, `getaddrinfo ENOTFOUND db-0`), or `no answer`. */
  readonly error: string;
}

/**
 * What a join attempt that ended without a welcome is logged with: each seed it asked (this
 * node itself left out) with the reason the transport knows, so an operator sees at the first
 * failure that the seed is refusing, unresolvable or silent, not only that the join gave up.
 */
export function joinAttemptFailure(
  seeds: readonly NodeAddress[],
  self: NodeAddress,
  attempt: number,
  maxAttempts: number,
  dialFailureOf: (seed: NodeAddress) => string | undefined,
  /** The member that said a live cluster saw the join (`membership.join-seen`), if one did. */
  answeredBy?: string,
): { fields: Record<string, unknown>; message: string } {
  const silent = answeredBy === undefined ? 'no answer' : 'no welcome yet';
  const failures: SeedFailure[] = seeds
    .filter((s) => !sameNode(s, self))
    .map((s) => ({ seed: formatNodeAddress(s), error: dialFailureOf(s) ?? silent }));
  const of = Number.isFinite(maxAttempts) ? `/${maxAttempts}` : '';
  const seen = answeredBy === undefined ? '' : ` (a live cluster saw it: ${answeredBy} answered)`;
  return {
    fields: {
      event: 'cluster.join-attempt-failed',
      attempt,
      maxAttempts,
      seeds: failures,
      ...(answeredBy === undefined ? {} : { answeredBy }),
    },
    message: `join attempt ${attempt}${of} failed${seen}: ${failures.map((f) => `${f.seed} (${f.error})`).join(', ')}`,
  };
}
