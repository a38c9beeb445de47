import { DEAD_LETTER_REASONS } from './dead-letter-reasons.js';

/** A series' labels: label name to value. */
export type Labels = Readonly<Record<string, string>>;

/**
 * Every metric doyen itself records, declared when a node's metrics are created: a dashboard or
 * an alert on a series that has not happened yet (no dead letter, no failed handshake) reads 0
 * instead of finding nothing. Label values known in advance (lanes, dead-letter reasons, ask
 * outcomes) get their series at 0; open-ended ones (a peer's reject reason, a message type) only
 * declare their label names. A test finds every `doyen_*` name in the sources here.
 */
export interface MetricDefinition {
  readonly name: string;
  readonly help: string;
  readonly kind: 'counter' | 'gauge' | 'histogram';
  /** The label names the metric is recorded with (none: one unlabelled series). */
  readonly labelNames?: readonly string[];
  /** Label sets created at 0 (default: the unlabelled series when there are no label names). */
  readonly zeros?: readonly Labels[];
  /** Histograms: bucket bounds (default LATENCY_BUCKETS_SECONDS). */
  readonly buckets?: readonly number[];
}

/** Default buckets for latencies in seconds (Prometheus' own, finer below 10 ms). */
export const LATENCY_BUCKETS_SECONDS: readonly number[] = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];

/** Heartbeat inter-arrival (s): around the heartbeat interval (100 ms by default), and the pauses a failure detector judges. */
export const HEARTBEAT_BUCKETS_SECONDS: readonly number[] = [
  0.05, 0.075, 0.1, 0.125, 0.15, 0.2, 0.3, 0.5, 1, 2, 5,
];

/** Mailbox depths seen by a sampled enqueue. */
export const MAILBOX_DEPTH_BUCKETS: readonly number[] = [0, 1, 10, 100, 1_000, 10_000, 100_000];

const byLane: readonly Labels[] = [{ lane: 'user' }, { lane: 'system' }];

export const DOYEN_METRICS: readonly MetricDefinition[] = [
  // core
  {
    name: 'doyen_dead_letters_total',
    help: 'Messages that could not be delivered',
    kind: 'counter',
    labelNames: ['reason'],
    zeros: DEAD_LETTER_REASONS.map((reason) => ({ reason })),
  },
  {
    name: 'doyen_remote_rate_limited_total',
    help: 'Remote messages dropped over their per-node rate',
    kind: 'counter',
    labelNames: ['type'],
  },
  {
    name: 'doyen_mailbox_dropped_total',
    help: 'Local messages dropped by a full bounded mailbox',
    kind: 'counter',
    labelNames: ['policy'],
  },
  {
    name: 'doyen_mailbox_high_water_total',
    help: 'Times a local mailbox grew through its high-water mark',
    kind: 'counter',
  },
  {
    name: 'doyen_ask_refused_total',
    help: 'Asks refused: too many waiting for one remote node',
    kind: 'counter',
  },
  {
    name: 'doyen_watch_dropped_total',
    help: 'Death-watch registrations dropped over the per-node cap',
    kind: 'counter',
  },
  {
    name: 'doyen_actor_failures_total',
    help: 'Actor logic failures',
    kind: 'counter',
    labelNames: ['decision'],
    zeros: [{ decision: 'restart' }, { decision: 'stop' }],
  },
  {
    name: 'doyen_ask_duration_seconds',
    help: 'From an ask to its reply (outcome settled) or its timeout',
    kind: 'histogram',
    labelNames: ['outcome'],
    zeros: [{ outcome: 'settled' }, { outcome: 'timeout' }],
  },
  {
    name: 'doyen_mailbox_depth_sampled',
    help: 'Mailbox depth seen by one enqueue in 64 (after it)',
    kind: 'histogram',
    buckets: MAILBOX_DEPTH_BUCKETS,
  },
  // wire
  {
    name: 'doyen_wire_frames_sent_total',
    help: 'Frames sent',
    kind: 'counter',
    labelNames: ['lane'],
    zeros: byLane,
  },
  {
    name: 'doyen_wire_messages_sent_total',
    help: 'Messages sent',
    kind: 'counter',
    labelNames: ['lane'],
    zeros: byLane,
  },
  {
    name: 'doyen_wire_messages_received_total',
    help: 'Messages received',
    kind: 'counter',
    labelNames: ['lane'],
    zeros: byLane,
  },
  {
    name: 'doyen_wire_inbound_connections_total',
    help: 'Inbound connections accepted',
    kind: 'counter',
    labelNames: ['lane'],
    zeros: byLane,
  },
  {
    name: 'doyen_wire_handshake_failures_total',
    help: 'Outbound handshakes that failed',
    kind: 'counter',
    labelNames: ['lane', 'reason'],
  },
  {
    name: 'doyen_wire_encode_failures_total',
    help: 'Messages that could not be encoded',
    kind: 'counter',
    labelNames: ['lane'],
    zeros: byLane,
  },
  {
    name: 'doyen_wire_rejected_total',
    help: 'Inbound input refused at the boundary',
    kind: 'counter',
    labelNames: ['reason'],
  },
  {
    name: 'doyen_wire_forged_total',
    help: 'Messages dropped for claiming another identity',
    kind: 'counter',
  },
  {
    name: 'doyen_wire_unauthorized_total',
    help: 'Messages dropped because their sender lacks the authority their type declares',
    kind: 'counter',
  },
  {
    name: 'doyen_wire_connections_replaced_total',
    help: 'Inbound connections closed because the same identity and lane connected again',
    kind: 'counter',
  },
  {
    name: 'doyen_wire_handshake_duration_seconds',
    help: 'Outbound connections: from the dial to the verified welcome',
    kind: 'histogram',
    labelNames: ['lane'],
    zeros: byLane,
  },
  // cluster
  {
    name: 'doyen_heartbeat_interarrival_seconds',
    help: 'Time between two heartbeats from the same member',
    kind: 'histogram',
    buckets: HEARTBEAT_BUCKETS_SECONDS,
  },
  {
    name: 'doyen_singleton_lease_changes_total',
    help: 'Host leases acquired, lost (no majority renewed in time) and released, per scope (owner scopes as scope "owner"); requests for scopes beyond the voter cap refused; owner fences completed, voter tombstones, this node fenced, fences refused',
    kind: 'counter',
    labelNames: ['scope', 'change'],
  },
  {
    name: 'doyen_fd_connection_refused_total',
    help: 'Peers judged unreachable at once because a dial to them was refused',
    kind: 'counter',
  },
  {
    name: 'doyen_sbr_decisions_total',
    help: 'Split-brain resolver decisions',
    kind: 'counter',
    labelNames: ['decision', 'by'],
  },
  {
    name: 'doyen_receptionist_refused_total',
    help: 'Receptionist registrations and listings refused (over a bound, or not their own)',
    kind: 'counter',
    labelNames: ['reason'],
  },
  // partitions, election, lease
  {
    name: 'doyen_partitions_tables_refused_total',
    help: 'Partition tables refused: not from the allocator host, or naming non-members',
    kind: 'counter',
    labelNames: ['reason'],
  },
  {
    name: 'doyen_election_messages_sent_total',
    help: 'Election messages sent, by algorithm and type.',
    kind: 'counter',
    labelNames: ['algorithm', 'type'],
  },
  {
    name: 'doyen_lease_acquire_total',
    help: 'Lease acquire attempts by result (held, refused, unavailable).',
    kind: 'counter',
    labelNames: ['lease', 'result'],
  },
  {
    name: 'doyen_lease_lost_total',
    help: 'Held leases lost, by reason.',
    kind: 'counter',
    labelNames: ['lease', 'reason'],
  },
  {
    name: 'doyen_lease_held',
    help: '1 while this process holds the lease.',
    kind: 'gauge',
    labelNames: ['lease'],
  },
  // sharding
  {
    name: 'doyen_sharding_active_entities',
    help: 'Entities running on this node, per entity type',
    kind: 'gauge',
    labelNames: ['type'],
  },
  {
    name: 'doyen_sharding_activations_total',
    help: 'Entities started on this node, per entity type',
    kind: 'counter',
    labelNames: ['type'],
  },
  {
    name: 'doyen_sharding_passivations_total',
    help: 'Entities stopped on this node, per entity type and reason (idle, cap, hand-off, lease-lost, stopped)',
    kind: 'counter',
    labelNames: ['type', 'reason'],
  },
  {
    name: 'doyen_sharding_handoff_duration_seconds',
    help: 'From the start of a partition drain on this node to its entities stopped and its hand-off ready',
    kind: 'histogram',
  },
  {
    name: 'doyen_sharding_buffered_messages',
    help: 'Messages held on this node for partitions not active anywhere it knows',
    kind: 'gauge',
  },
  {
    name: 'doyen_sharding_dropped_messages_total',
    help: 'Messages for entities dropped on this node, per entity type and reason',
    kind: 'counter',
    labelNames: ['type', 'reason'],
  },
  {
    name: 'doyen_sharding_remembered_restarts_total',
    help: 'Remembered entities restarted on this node after their partition became active here, per entity type',
    kind: 'counter',
    labelNames: ['type'],
  },
  {
    name: 'doyen_sharding_remember_store_failures_total',
    help: 'Failed calls to the remember-entities store on this node (retried with backoff), per operation (write, list)',
    kind: 'counter',
    labelNames: ['operation'],
    zeros: [{ operation: 'write' }, { operation: 'list' }],
  },
  {
    name: 'doyen_sharding_remember_pending_writes',
    help: 'Remember-entities changes (id added or removed) on this node not yet written to the store',
    kind: 'gauge',
  },
  {
    name: 'doyen_sharding_keeper_events_total',
    help: 'Partition keeper events on this node: tokens created, void or duplicate, hand-offs, activations, own lease lost, refused input',
    kind: 'counter',
    labelNames: ['event'],
    zeros: [
      'token-created',
      'token-void',
      'token-duplicate',
      'handed-off',
      'activated',
      'lease-lost',
      'refused',
    ].map((event) => ({ event })),
  },
  // management (doyen)
  { name: 'doyen_cluster_members', help: 'Members in this node view', kind: 'gauge' },
  { name: 'doyen_cluster_unreachable', help: 'Unreachable members', kind: 'gauge' },
  { name: 'doyen_cluster_version', help: 'Membership version', kind: 'gauge' },
  { name: 'doyen_cluster_is_coordinator', help: '1 on the coordinator', kind: 'gauge' },
  {
    name: 'doyen_http_refused_total',
    help: 'Management requests refused',
    kind: 'counter',
    labelNames: ['reason'],
  },
  {
    name: 'doyen_http_event_streams_evicted_total',
    help: 'Event streams closed to serve a newer one',
    kind: 'counter',
    labelNames: ['reason'],
  },
  // the cluster console (doyen)
  {
    name: 'doyen_console_updates_refused_total',
    help: 'Console updates from members dropped',
    kind: 'counter',
    labelNames: ['reason'],
  },
  {
    name: 'doyen_console_viewers_closed_total',
    help: 'Console viewers closed by the server',
    kind: 'counter',
    labelNames: ['reason'],
    zeros: [{ reason: 'slow' }, { reason: 'replaced' }],
  },
  { name: 'doyen_console_history_bytes', help: 'Bytes of console history kept', kind: 'gauge' },
];
