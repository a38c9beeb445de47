import type { Cluster } from '@doyen/cluster';
import type { ActorSystem } from '@doyen/core';
import { type PartitionService, Retirement } from '@doyen/partitions';
import type { Sharding } from '@doyen/sharding';

/** What the retire step needs of the incarnation that is leaving. */
export interface RetiringIncarnation {
  readonly system: ActorSystem;
  readonly cluster: Cluster;
  readonly partitions: PartitionService | undefined;
  readonly sharding: Sharding | undefined;
}

export interface RetireOptions {
  /** The role partitions are owned by (`partitions.role`). */
  readonly role?: string;
  /** The longest the step waits (the before-leave phase's timeout, less a margin to log). */
  readonly timeoutMs: number;
  /** False once this incarnation is no longer the node's current one (a restart): stop waiting. */
  readonly current: () => boolean;
  /** How often the hand-offs are looked at. */
  readonly pollMs?: number;
}

/** `ended`: the incarnation was replaced, or downed or removed meanwhile (nothing left to hand off). */
export type RetireOutcome = 'no-partitions' | 'last-member' | 'retired' | 'timed-out' | 'ended';

/**
 * The coordinated shutdown's RETIRE step, before the node leaves (as Akka's shard regions hand
 * off before cluster-leave): the allocator is asked for a table in which this node, still up,
 * owns nothing; the node then waits until that table is here and every partition has been
 * handed off (none active, no drain running, no message held), so the entities' state and the
 * messages they had not yet seen travel to their new owners. Then the leave goes on as before;
 * without this step the membership (and with it the owner lease) ended mid-drain and the
 * successors recreated the partitions empty. A last member (no other up member with the role)
 * has no one to hand to and skips the wait. Bounded by `timeoutMs`; never throws.
 */
export async function retirePartitions(
  incarnation: RetiringIncarnation,
  options: RetireOptions,
): Promise<RetireOutcome> {
  const { system, cluster, partitions, sharding } = incarnation;
  if (!partitions) return 'no-partitions';
  const { role } = options;
  const others = cluster
    .state()
    .membership?.members.some(
      (m) => m.status === 'up' && m.uid !== system.node.uid && (role === undefined || m.roles.includes(role)),
    );
  if (!others) {
    system.logger.info(
      { event: 'partitions.retire-skipped', reason: 'last-member' },
      'no other member may own partitions: leaving without handing them off',
    );
    return 'last-member';
  }
  const started = system.clock.now();
  const region = sharding?.region;
  // ...and every hand-off confirmed by its receiver: one lost on a reset connection is probed and
  // taken back by this node, which must still be here to send it again
  const handedOff = () =>
    !region ||
    (region.activePartitions().length === 0 &&
      region.drainingPartitions().length === 0 &&
      region.bufferedCount() === 0 &&
      (sharding?.unconfirmedHandOffs() ?? 0) === 0 &&
      // a token handed here as the owner lease lapsed is held, not active: it must go on too
      (sharding?.tokensHeld() ?? 0) === 0);
  const retirement = new Retirement(system, cluster, partitions);
  const deadline = started + options.timeoutMs;
  const pollMs = options.pollMs ?? 10;
  let outcome: RetireOutcome = 'retired';
  try {
    while (!(retirement.retired() && handedOff())) {
      // downed or removed: its owner lease ends, the others recover its partitions; no hand-off
      // can go out any more, so waiting out the phase only delays the shutdown
      const status = cluster.state().status;
      if (!options.current() || status === 'down' || status === 'removed') {
        outcome = 'ended';
        break;
      }
      if (system.clock.now() >= deadline) {
        outcome = 'timed-out';
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, pollMs));
    }
  } finally {
    retirement.stop();
  }
  const ms = system.clock.now() - started;
  const fields = {
    ms,
    tableVersion: partitions.table()?.version ?? 0,
    active: region?.activePartitions().length ?? 0,
    draining: region?.drainingPartitions().length ?? 0,
    buffered: region?.bufferedCount() ?? 0,
    unconfirmed: sharding?.unconfirmedHandOffs() ?? 0,
    tokensHeld: sharding?.tokensHeld() ?? 0,
  };
  // what is still held says which hand-off or activation it waits for
  const bufferedIn = region?.bufferedPartitions().slice(0, 20) ?? [];
  if (outcome === 'retired')
    system.logger.info(
      { event: 'partitions.retired', ...fields },
      `every partition handed off in ${ms} ms: leaving`,
    );
  else
    system.logger.warn(
      { event: 'partitions.retire-incomplete', reason: outcome, ...fields, bufferedIn },
      `partitions not all handed off (${outcome}) after ${ms} ms: leaving anyway`,
    );
  return outcome;
}
