// What the sharding bench's processes share: the sharded counter every node registers (a
// `fromTransition` entity that checks the per-sender sequence numbers of what it counts), the
// plain sink actor the same-run remote tell baseline sends to, their message types, and the
// settings the bench hands the nodes through the environment.
import { type ActorRef, fromTransition, type Message } from '../../packages/core/src/index.js';

/** The entity type name, the role that hosts it, and the plain sink's actor name. */
export const COUNTER_TYPE = 'counter';
/**
 * The same counter as a type of its own for the cold-activation figure, with the activation line
 * at debug as an app has it (the default): `counter`'s lines at info are the rolling restart's
 * overlap evidence, and writing and reading one per activation is not an activation's cost.
 */
export const COLD_COUNTER_TYPE = 'cold-counter';
/**
 * The cold figure's warm-up: the same counter again, passivated `COLD_WARMUP_PASSIVATE_MS` after its
 * last message. Two seconds of cold asks at 5k/s warm every process's activation path up, and their
 * 10,000 entities are gone before the measured asks (whose heaps they would otherwise grow) and before
 * the rolling restart (whose hand-offs would otherwise carry their snapshots).
 */
export const COLD_WARMUP_TYPE = 'cold-warmup';
export const COLD_WARMUP_PASSIVATE_MS = 2000;
/**
 * The same counter with `remember: true` (its activations at info: the remembered figure reads
 * every start from the lines), registered only when the nodes are given a store (`REMEMBER_ETCD_ENV`).
 */
export const REMEMBERED_COUNTER_TYPE = 'remembered-counter';
/** etcd client URLs (comma-separated) of the remembered type's store; unset, the type is not registered. */
export const REMEMBER_ETCD_ENV = 'SHARDING_BENCH_REMEMBER_ETCD';
/** The store's key namespace: a fresh one per run, so no run restarts another's ids. */
export const REMEMBER_CLUSTER_ENV = 'SHARDING_BENCH_REMEMBER_CLUSTER';
/** The nodes' `restartsPerSecond` (unset: sharding's default). */
export const REMEMBER_RATE_ENV = 'SHARDING_BENCH_REMEMBER_RATE';
/** The remembered type's entity ids. */
export function rememberedId(i: number): string {
  return `rem-${i}`;
}
export const SHARD_ROLE = 'shard';
export const SINK_NAME = 'sharding-bench-sink';
export const SINK_PATH = `/user/${SINK_NAME}`;

/** Every message type the bench sends or answers with: registered on every node. */
export const BENCH_MESSAGE_TYPES = ['sb.add', 'sb.added', 'sb.get', 'sb.state', 'sb.tell'] as const;

export type CounterEvent =
  | { readonly type: 'sb.add'; readonly seq: number; readonly replyTo?: ActorRef<AddedReply> }
  | { readonly type: 'sb.get'; readonly replyTo: ActorRef<StateReply> }
  | { readonly type: 'sb.tell' };

export interface CounterState {
  readonly count: number;
  /**
   * The first sequence number this entity's state saw (0: none yet). Above 1, the state began
   * after earlier messages were counted elsewhere: it was lost (restarted without its snapshot).
   */
  readonly first: number;
  /** The highest sequence number counted (the load generator is each entity's one sender). */
  readonly last: number;
  /**
   * Messages that came after a later one (seq ≤ `last`): reordered or repeated. A gap (a message
   * lost before this one) is not counted here: the count against what was sent counts it, once.
   */
  readonly outOfOrder: number;
  readonly tells: number;
}

export interface AddedReply extends Message {
  readonly type: 'sb.added';
  readonly seq: number;
}

export interface StateReply extends Message, CounterState {
  readonly type: 'sb.state';
  /** When the entity handled the `sb.get` (wall-clock ms on its node): splits an ask's round trip. */
  readonly at?: number;
  /** The process that handled it (which owner a slow ask went to). */
  readonly pid?: number;
}

/** The sharded counter: `sb.add` counts and answers, `sb.get` answers the state, `sb.tell` counts silently. */
export const counterLogic = fromTransition(
  (state: CounterState, event: CounterEvent): CounterState => {
    switch (event.type) {
      case 'sb.add': {
        const fresh = state.first === 0;
        const next: CounterState = {
          ...state,
          count: state.count + 1,
          first: fresh ? event.seq : state.first,
          last: Math.max(state.last, event.seq),
          // a fresh state cannot judge order: its predecessor's messages are not in it
          outOfOrder: state.outOfOrder + (!fresh && event.seq <= state.last ? 1 : 0),
        };
        event.replyTo?.send({ type: 'sb.added', seq: event.seq } satisfies AddedReply);
        return next;
      }
      case 'sb.get':
        event.replyTo.send({
          type: 'sb.state',
          ...state,
          at: performance.timeOrigin + performance.now(),
          pid: process.pid,
        } satisfies StateReply);
        return state;
      case 'sb.tell':
        entityTells.count++;
        return { ...state, tells: state.tells + 1 };
      default:
        return state;
    }
  },
  { count: 0, first: 0, last: 0, outOfOrder: 0, tells: 0 } satisfies CounterState,
);

/**
 * `sb.tell`s every counter entity of this process handled: the sink reports it, so the tell
 * comparison ends both of its sides with one ask per node (an ask per entity would weigh on the
 * sharded side only). A bench's shortcut, not a pattern: entities share nothing in an app.
 */
export const entityTells = { count: 0 };

/**
 * `sb.tell`s the plain sink actors of this process handled (the one sink and the fan-out sinks):
 * reported by the sink as `tells`, for the same reason as `entityTells`.
 */
export const sinkTells = { count: 0 };

/**
 * The plain actor of the remote tell baseline: counts `sb.tell`; `sb.get` answers the tells of
 * this process's plain sinks and, as `count`, those its counter entities handled.
 */
export const sinkLogic = fromTransition(
  (state: CounterState, event: CounterEvent): CounterState => {
    if (event.type === 'sb.tell') {
      sinkTells.count++;
      return { ...state, tells: state.tells + 1 };
    }
    if (event.type === 'sb.get')
      event.replyTo.send({
        type: 'sb.state',
        ...state,
        tells: sinkTells.count,
        count: entityTells.count,
      } satisfies StateReply);
    return state;
  },
  { count: 0, first: 0, last: 0, outOfOrder: 0, tells: 0 } satisfies CounterState,
);

/**
 * The plain baseline with the sharded tell's fan-out: as many plain actors as the tell's entities,
 * `FANOUT_SINKS` per hosting node (`fanoutSinkName(k)`), actor k on the k-th node modulo their count.
 */
export const FANOUT_SINKS = 1000;
export function fanoutSinkName(k: number): string {
  return `sharding-bench-fan-${k}`;
}

/**
 * Set to `debug` (bench --hot-path) to log entity activations and stops at debug, as an app does by
 * default: no witness lines then, and the hot path's figures do not carry their cost.
 */
export const ACTIVATION_LOG_ENV = 'SHARDING_BENCH_ACTIVATION_LOG';

/** The environment variable that makes a node the load generator, holding its control port. */
export const LOAD_PORT_ENV = 'SHARDING_BENCH_LOAD_PORT';

/** Entity `i` of the bench's population. */
export function entityId(i: number): string {
  return `e-${i}`;
}
