// What the sharding chaos runner (chaos-sharding-run.ts) and its app module (chaos-sharding-app.ts,
// run inside every `doyen node`) agree on: the entity type, the messages, the `event` fields of the
// app's log lines the checker reads, the environment that makes a node the sender, and the signals
// that drive the sender (an app module takes no flags of its own).

/** The sharded entity type; its partitions are owned by the nodes with this role. */
export const CHAOS_ENTITY_TYPE = 'counter';
export const CHAOS_ROLE = 'counter';

/** `chaos.msg` {from, seq, replyTo}: one sequence-numbered message; the entity answers `chaos.ack`. */
export const CHAOS_MSG = 'chaos.msg';
export const CHAOS_ACK = 'chaos.ack';

/** An entity received a message: `entityId`, `from`, `seq`, `incarnation` (node uid). */
export const CHAOS_RECEIVED_EVENT = 'chaos.received';
/** The sender sent one: `entityId`, `from`, `seq`, `probe`. */
export const CHAOS_SENT_EVENT = 'chaos.sent';
/** Its ack came back: `entityId`, `seq`, `ms`. */
export const CHAOS_ACKED_EVENT = 'chaos.acked';
/** Its ask failed (timeout, refused): `entityId`, `seq`, `error`. */
export const CHAOS_FAILED_EVENT = 'chaos.failed';
/** The final probe is over: `answered`, `failed`. */
export const CHAOS_PROBE_DONE_EVENT = 'chaos.probe-done';

/** Environment of the sender node (no role: it only routes) and the load it sends. */
export const CHAOS_SENDER_ENV = 'DOYEN_CHAOS_SENDER';
export const CHAOS_ENTITIES_ENV = 'DOYEN_CHAOS_ENTITIES';
export const CHAOS_SEND_EVERY_ENV = 'DOYEN_CHAOS_SEND_EVERY_MS';
export const CHAOS_ASK_TIMEOUT_ENV = 'DOYEN_CHAOS_ASK_TIMEOUT_MS';
/** The hosting nodes' owner (and host) lease, ms: the positive control lengthens it so the fence is what keeps order. */
export const CHAOS_LEASE_ENV = 'DOYEN_CHAOS_LEASE_MS';
/**
 * One node's split-brain resolver stable-after, ms: the positive control makes the cut-off owner
 * slow to down itself, so that it still runs when the majority has moved its partitions.
 */
export const CHAOS_STABLE_AFTER_ENV = 'DOYEN_CHAOS_STABLE_AFTER_MS';

/** SIGUSR1 to the sender: start the steady load. SIGUSR2: stop it, then probe every entity once. */
export const START_LOAD_SIGNAL = 'SIGUSR1';
export const PROBE_SIGNAL = 'SIGUSR2';

/** Tries per entity in the final probe (the ask timeout each): none answered means unreachable. */
export const PROBE_ROUNDS = 3;

export const entityIdOf = (i: number) => `c-${i}`;
