// The sharding chaos runner's `--app` module (`doyen node --app bench/lib/chaos-sharding-app.ts`).
// Every node registers the sharded `counter` type (doyen's `fromTransition` fast path), owned by the
// nodes with the `counter` role: an entity logs every (sender, seq) it receives (`chaos.received`,
// the checker's record of delivery) and answers with an ack. The node started with
// DOYEN_CHAOS_SENDER=1 has no role (it only routes, proxy-only) and is the sender: on SIGUSR1 it
// sends sequence-numbered asks round-robin to every entity, two back to back per tick (so per-sender
// order is at stake), logging each send and its outcome; on SIGUSR2 it stops and asks every entity
// once more (the probe: an entity that does not answer is unreachable), then logs `chaos.probe-done`.
// types only from doyen, and its `fromTransition` from its own small module: the nodes run the
// built CLI (bench/lib/built-cli.ts), and tsx then loads this file and those two, not doyen's sources
import { fromTransition } from '../../packages/core/src/transition-logic.js';
import type {
  ActorRef,
  DoyenNode,
  IncarnationInfo,
  Logger,
  Message,
  ShardedEntities,
} from '../../packages/doyen/src/index.js';
import {
  CHAOS_ACK,
  CHAOS_ACKED_EVENT,
  CHAOS_ASK_TIMEOUT_ENV,
  CHAOS_ENTITIES_ENV,
  CHAOS_ENTITY_TYPE,
  CHAOS_FAILED_EVENT,
  CHAOS_LEASE_ENV,
  CHAOS_MSG,
  CHAOS_PROBE_DONE_EVENT,
  CHAOS_RECEIVED_EVENT,
  CHAOS_ROLE,
  CHAOS_SEND_EVERY_ENV,
  CHAOS_SENDER_ENV,
  CHAOS_SENT_EVENT,
  CHAOS_STABLE_AFTER_ENV,
  entityIdOf,
  PROBE_ROUNDS,
  PROBE_SIGNAL,
  START_LOAD_SIGNAL,
} from './chaos-sharding-protocol.js';

interface ChaosMsg extends Message {
  readonly type: typeof CHAOS_MSG;
  readonly from: string;
  readonly seq: number;
  readonly replyTo: ActorRef;
}
interface ChaosAck extends Message {
  readonly type: typeof CHAOS_ACK;
  readonly entityId: string;
  readonly seq: number;
}

const isSender = process.env[CHAOS_SENDER_ENV] === '1';
const positive = (v: string | undefined, fallback: number) => {
  const n = Number(v);
  return Number.isFinite(n) && n > 0 ? n : fallback;
};
const entityCount = positive(process.env[CHAOS_ENTITIES_ENV], 500);
const sendEveryMs = positive(process.env[CHAOS_SEND_EVERY_ENV], 20);
const askTimeoutMs = positive(process.env[CHAOS_ASK_TIMEOUT_ENV], 8_000);

const leaseMs = positive(process.env[CHAOS_LEASE_ENV], 0);
const stableAfterMs = positive(process.env[CHAOS_STABLE_AFTER_ENV], 0);

/**
 * Defaults below flags: every node agrees the partitions belong to the `counter` role; a lease
 * length and a split-brain stable-after when the runner sets them (the positive control: a lease
 * longer than the downing and a cut-off owner slow to down itself, so that only the fence keeps a
 * successor from activating while the cut-off owner still runs).
 */
export const config = {
  roles: isSender ? [] : [CHAOS_ROLE],
  partitions: { role: CHAOS_ROLE },
  ...(leaseMs > 0 ? { hostLease: { leaseMs } } : {}),
  ...(stableAfterMs > 0 ? { clusterOptions: { sbr: { stableAfterMs } } } : {}),
};

let logger: Logger | undefined;

/** The entity: logs each receipt with its incarnation (node uid), answers an ack. */
function counterLogic(incarnation: string) {
  return fromTransition(
    (state: { entityId: string; received: number }, event: ChaosMsg) => {
      if (event.type !== CHAOS_MSG) return state;
      logger?.info(
        {
          event: CHAOS_RECEIVED_EVENT,
          entityId: state.entityId,
          from: event.from,
          seq: event.seq,
          incarnation,
        },
        'chaos message received',
      );
      const ack: ChaosAck = { type: CHAOS_ACK, entityId: state.entityId, seq: event.seq };
      event.replyTo.send(ack);
      return { ...state, received: state.received + 1 };
    },
    ({ input }: { input: { entityId: string } }) => ({ entityId: input.entityId, received: 0 }),
  );
}

let counters: ShardedEntities<ChaosMsg> | undefined;
const seqs = new Map<string, number>();
let next = 0;
let load: NodeJS.Timeout | undefined;
let wired = false;

/** One ask; resolves true when acked. Every send and outcome is logged for the checker. */
function sendOne(entityId: string, probe: boolean): Promise<boolean> {
  const seq = (seqs.get(entityId) ?? 0) + 1;
  seqs.set(entityId, seq);
  const sentAt = performance.now();
  logger?.info({ event: CHAOS_SENT_EVENT, entityId, from: 'sender', seq, probe }, 'chaos message sent');
  let asked: Promise<ChaosAck>;
  try {
    asked = counters!
      .ref(entityId)
      .ask<ChaosAck>((replyTo) => ({ type: CHAOS_MSG, from: 'sender', seq, replyTo }), {
        timeout: askTimeoutMs,
      });
  } catch (error) {
    asked = Promise.reject(error);
  }
  return asked.then(
    () => {
      logger?.info(
        { event: CHAOS_ACKED_EVENT, entityId, seq, ms: Math.round(performance.now() - sentAt) },
        'chaos ack',
      );
      return true;
    },
    (error: unknown) => {
      logger?.info(
        {
          event: CHAOS_FAILED_EVENT,
          entityId,
          seq,
          error: error instanceof Error ? error.message : String(error),
        },
        'chaos ask failed',
      );
      return false;
    },
  );
}

function tick(): void {
  const entityId = entityIdOf(next);
  next = (next + 1) % entityCount;
  // two back to back: the second must reach the entity after the first
  void sendOne(entityId, false);
  void sendOne(entityId, false);
}

/** Every entity asked once; the ones that did not answer again, up to PROBE_ROUNDS tries in all. */
async function probe(): Promise<void> {
  if (load) clearInterval(load);
  load = undefined;
  let waiting = Array.from({ length: entityCount }, (_, i) => entityIdOf(i));
  for (let round = 0; round < PROBE_ROUNDS && waiting.length > 0; round++) {
    const outcomes = await Promise.all(waiting.map((id) => sendOne(id, true)));
    waiting = waiting.filter((_, i) => !outcomes[i]);
  }
  logger?.info(
    { event: CHAOS_PROBE_DONE_EVENT, answered: entityCount - waiting.length, failed: waiting.length },
    'chaos probe done',
  );
}

export function setup(node: DoyenNode, _incarnation: IncarnationInfo): void {
  logger = node.logger;
  node.system.messageTypes.register([CHAOS_MSG, CHAOS_ACK]);
  const sharding = node.sharding;
  if (!sharding) throw new Error('the chaos app needs partitions on (sharding is off)');
  const uid = String(node.system.node.uid);
  // the checker reads every activation and stop from the log: the lines at info
  counters = sharding.register(CHAOS_ENTITY_TYPE, counterLogic(uid), {
    role: CHAOS_ROLE,
    activationLog: 'info',
  });
  if (!isSender || wired) return;
  wired = true;
  process.on(START_LOAD_SIGNAL, () => {
    load ??= setInterval(tick, sendEveryMs);
  });
  process.on(PROBE_SIGNAL, () => void probe());
}
