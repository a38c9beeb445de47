import type { Metrics } from '@doyen/core';

/** The sharding series (declared in core's metric catalogue, so they read 0 from the start). */
export const SHARDING_METRICS = {
  active: ['doyen_sharding_active_entities', 'Entities running on this node, per entity type'],
  activations: ['doyen_sharding_activations_total', 'Entities started on this node, per entity type'],
  passivations: [
    'doyen_sharding_passivations_total',
    'Entities stopped on this node, per entity type and reason (idle, cap, hand-off, lease-lost, stopped)',
  ],
  handOff: [
    'doyen_sharding_handoff_duration_seconds',
    'From the start of a partition drain on this node to its entities stopped and its hand-off ready',
  ],
  buffered: [
    'doyen_sharding_buffered_messages',
    'Messages held on this node for partitions not active anywhere it knows',
  ],
  dropped: [
    'doyen_sharding_dropped_messages_total',
    'Messages for entities dropped on this node, per entity type and reason',
  ],
  rememberedRestarts: [
    'doyen_sharding_remembered_restarts_total',
    'Remembered entities restarted on this node after their partition became active here, per entity type',
  ],
  rememberFailures: [
    'doyen_sharding_remember_store_failures_total',
    'Failed calls to the remember-entities store on this node (retried with backoff), per operation (write, list)',
  ],
  rememberPending: [
    'doyen_sharding_remember_pending_writes',
    'Remember-entities changes (id added or removed) on this node not yet written to the store',
  ],
} as const;

/** The few calls the runtime makes, named once. */
export class ShardingMetrics {
  constructor(private readonly metrics: Metrics) {}

  active(entityType: string, count: number): void {
    this.metrics.set(SHARDING_METRICS.active[0], SHARDING_METRICS.active[1], count, { type: entityType });
  }

  activated(entityType: string): void {
    this.metrics.inc(SHARDING_METRICS.activations[0], SHARDING_METRICS.activations[1], { type: entityType });
  }

  passivated(entityType: string, reason: string): void {
    this.metrics.inc(SHARDING_METRICS.passivations[0], SHARDING_METRICS.passivations[1], {
      type: entityType,
      reason,
    });
  }

  handOff(seconds: number): void {
    this.metrics.observe(SHARDING_METRICS.handOff[0], SHARDING_METRICS.handOff[1], seconds);
  }

  buffered(count: number): void {
    this.metrics.set(SHARDING_METRICS.buffered[0], SHARDING_METRICS.buffered[1], count);
  }

  dropped(entityType: string, reason: string): void {
    this.metrics.inc(SHARDING_METRICS.dropped[0], SHARDING_METRICS.dropped[1], {
      type: entityType.slice(0, 64),
      reason,
    });
  }

  rememberedRestart(entityType: string): void {
    this.metrics.inc(SHARDING_METRICS.rememberedRestarts[0], SHARDING_METRICS.rememberedRestarts[1], {
      type: entityType,
    });
  }

  rememberStoreFailed(operation: 'write' | 'list'): void {
    this.metrics.inc(SHARDING_METRICS.rememberFailures[0], SHARDING_METRICS.rememberFailures[1], {
      operation,
    });
  }

  rememberPending(count: number): void {
    this.metrics.set(SHARDING_METRICS.rememberPending[0], SHARDING_METRICS.rememberPending[1], count);
  }
}
