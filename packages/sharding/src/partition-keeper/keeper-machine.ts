import { type Cluster, type Membership, memberKey } from '@doyen/cluster';
import { type ActorSystem, enqueueDecision, type Message, nodeKey, nodeOfKey } from '@doyen/core';
import type { PartitionTable } from '@doyen/partitions';
import { setup } from 'xstate';
import { arrive, GATHER_DUE, type GatherDue } from './hand-off-gather.js';
import {
  entryBytes,
  HAND_OFF_PART_BYTES,
  MAX_CARGO_ENTRY_BYTES,
  splitHandOff,
  withoutOversized,
} from './hand-off-parts.js';
import {
  decide,
  initialKeeperContext,
  type KeeperContext,
  type KeeperEffect,
  type KeeperEvent,
  type KeeperPolicy,
  type KeeperStep,
} from './keeper-decisions.js';
import {
  EMPTY_CARGO,
  type HandOffCargo,
  type KeeperHost,
  type KeeperInbox,
  type OwnerLeasePort,
} from './keeper-host.js';
import {
  type HandOff,
  type KeeperMessage,
  MAX_CARGO_ENTRIES,
  registerKeeperMessages,
  type TokenAnswer,
} from './keeper-messages.js';
import { UNSAFE_SKIP_FENCE_ENV, unsafeSkipFence } from './unsafe-skip-fence.js';

export const KEEPER_PATH = '/system/sharding-keeper';
const WAKE = 'keeper.tick';
export const KEEPER_EVENTS = 'doyen_sharding_keeper_events_total';
const KEEPER_EVENTS_HELP =
  'Partition keeper events on this node: tokens created, void or duplicate, hand-offs, activations, own lease lost, refused input';

export interface KeeperDeps {
  readonly system: ActorSystem;
  readonly policy: KeeperPolicy;
  readonly host: KeeperHost;
  readonly leases: OwnerLeasePort;
  /** Told after each effect that changes which partitions are active here. */
  readonly onActive?: (partition: number, active: boolean) => void;
  /** Told how many hand-offs from here await their receiver's receipt, whenever that changes. */
  readonly onUnconfirmed?: (count: number) => void;
  /** Told how many partitions' tokens this node holds (any phase), whenever that changes. */
  readonly onTokensHeld?: (count: number) => void;
  /** Encoded bytes per hand-off part (default HAND_OFF_PART_BYTES; Infinity: never chunk, tests' positive control). */
  readonly handOffPartBytes?: number;
  /**
   * Hand-offs arriving back to back are decided in one step (hand-off-gather.ts). Default true;
   * false decides each as it comes (the tests' control).
   */
  readonly gatherHandOffs?: boolean;
}

/** The older cargo first: what came with the token, then what the region kept. */
export function mergeCargo(first: HandOffCargo, then: HandOffCargo): HandOffCargo {
  if (first.snapshots.length === 0 && first.forwarded.length === 0) return then;
  if (then.snapshots.length === 0 && then.forwarded.length === 0) return first;
  return {
    snapshots: [...first.snapshots, ...then.snapshots],
    forwarded: [...first.forwarded, ...then.forwarded],
  };
}

/**
 * One node's partition keeper (see keeper-decisions.ts for the protocol): one state, one decision
 * per event, one timer (`keeper.tick`) rescheduled after each. Before every decision it reads the
 * owner lease (`holdsOwn()`) and, when it was lost, decides the loss FIRST: a node waking from a
 * pause past its lease stops its entities before it acts on anything that was waiting. The
 * action `run` performs the effects: calls on the runtime (KeeperHost), messages to other
 * members' keepers, the owner lease's bids and fences, logs and counts.
 */
export function createKeeperMachine(deps: KeeperDeps) {
  const { system, policy, host, leases } = deps;
  const peer = (key: string) => system.remoteRef(nodeOfKey(key), KEEPER_PATH);
  const active = (p: number, on: boolean) => deps.onActive?.(p, on);
  const partBytes = deps.handOffPartBytes ?? HAND_OFF_PART_BYTES;
  const gather = deps.gatherHandOffs ?? true;
  // a gathered hand-off is a token on its way in: a retiring node waits for it as for one it holds
  let tokensDecided = 0;
  let tokensGathered = 0;
  const tellTokensHeld = () => deps.onTokensHeld?.(tokensDecided + tokensGathered);
  // each hand-off until its receiver confirms it (the decisions probe; a lost one is taken back)
  const unconfirmed = new Map<number, HandOff>();
  /**
   * An answer travels in one frame: a dormant cargo (a void token's, reused by a creation) too
   * large for it is left out, logged and counted (the creation then starts those entities afresh)
   * rather than the answer lost on every retry.
   */
  const answerInOneFrame = (a: TokenAnswer, to: string): TokenAnswer => {
    let bytes = 0;
    for (const x of a.answers)
      if (x.dormant !== null)
        for (const e of [...x.dormant.cargo.snapshots, ...x.dormant.cargo.forwarded]) bytes += entryBytes(e);
    if (bytes <= Math.min(partBytes, 2 * HAND_OFF_PART_BYTES)) return a;
    for (const x of a.answers) {
      if (x.dormant === null) continue;
      const entries = x.dormant.cargo.snapshots.length + x.dormant.cargo.forwarded.length;
      if (entries === 0) continue;
      system.logger.warn(
        { event: 'sharding.cargo-entry-dropped', partition: x.partition, to, entries, dormant: true },
        'a dormant cargo is over one frame: left out of the answer',
      );
      system.metrics.inc(KEEPER_EVENTS, KEEPER_EVENTS_HELP, { event: 'cargo-entry-dropped' }, entries);
    }
    return {
      ...a,
      answers: a.answers.map((x) =>
        x.dormant === null ? x : { ...x, dormant: { ...x.dormant, cargo: EMPTY_CARGO } },
      ),
    };
  };
  /** The receiver refuses a cargo over MAX_CARGO_ENTRIES per list: the excess (newest) is dropped here, named and counted. */
  const withinEntryBound = (cargo: HandOffCargo, partition: number): HandOffCargo => {
    const over =
      Math.max(0, cargo.snapshots.length - MAX_CARGO_ENTRIES) +
      Math.max(0, cargo.forwarded.length - MAX_CARGO_ENTRIES);
    if (over === 0) return cargo;
    system.logger.warn(
      { event: 'sharding.cargo-entry-dropped', partition, entries: over, bound: MAX_CARGO_ENTRIES },
      `a hand-off over ${MAX_CARGO_ENTRIES} snapshots or messages: ${over} dropped`,
    );
    system.metrics.inc(KEEPER_EVENTS, KEEPER_EVENTS_HELP, { event: 'cargo-entry-dropped' }, over);
    return {
      snapshots: cargo.snapshots.slice(0, MAX_CARGO_ENTRIES),
      forwarded: cargo.forwarded.slice(0, MAX_CARGO_ENTRIES),
    };
  };
  const sendHandOff = (to: string, h: HandOff) => {
    const target = peer(to);
    // parts in order on one connection: joined at the receiver; a frame each, under the limit
    for (const m of splitHandOff(h, partBytes)) target.send(m as Message);
  };

  const execute = (effect: KeeperEffect): void => {
    switch (effect.kind) {
      case 'log':
        system.logger[effect.level]({ event: effect.event, ...effect.fields }, effect.msg);
        return;
      case 'count':
        system.metrics.inc(KEEPER_EVENTS, KEEPER_EVENTS_HELP, { event: effect.event });
        return;
      case 'activate': {
        const cargo = effect.takeRegionCargo
          ? mergeCargo(effect.cargo, host.takeCargo(effect.partition))
          : effect.cargo;
        host.activate(effect.partition, effect.version, cargo);
        active(effect.partition, true);
        return;
      }
      case 'deactivate':
        active(effect.partition, false);
        host.deactivate(effect.partition, effect.reason);
        return;
      case 'drain':
        active(effect.partition, false);
        host.drain(effect.partition);
        return;
      case 'hand-off': {
        const { cargo, dropped } = withoutOversized(
          withinEntryBound(mergeCargo(effect.cargo, host.takeCargo(effect.partition)), effect.partition),
          Math.min(MAX_CARGO_ENTRY_BYTES, partBytes),
        );
        // never silently: an entry no frame can carry is named and counted (its entity restarts fresh)
        for (const d of dropped) {
          system.logger.warn(
            { event: 'sharding.cargo-entry-dropped', partition: effect.partition, to: effect.to, ...d },
            `a ${d.kind} of ${d.bytes} bytes is over any frame: dropped from the hand-off`,
          );
          system.metrics.inc(KEEPER_EVENTS, KEEPER_EVENTS_HELP, { event: 'cargo-entry-dropped' });
        }
        const message: HandOff = {
          type: 'sharding.hand-off',
          from: policy.selfKey,
          partition: effect.partition,
          stamp: effect.stamp,
          version: effect.version,
          cargo,
        };
        unconfirmed.set(effect.partition, message);
        deps.onUnconfirmed?.(unconfirmed.size);
        sendHandOff(effect.to, message);
        return;
      }
      case 'take-back':
        // the step gave the kept hand-off back to the decisions already (keeper.taken-back)
        unconfirmed.delete(effect.partition);
        deps.onUnconfirmed?.(unconfirmed.size);
        return;
      case 'forget-hand-off':
        unconfirmed.delete(effect.partition);
        deps.onUnconfirmed?.(unconfirmed.size);
        return;
      case 'reroute':
        host.reroute(effect.partition);
        return;
      case 'start-buffering':
        host.startBuffering(effect.partition);
        return;
      case 'flush':
        host.flush(effect.partition, effect.owner);
        return;
      case 'marker':
        host.sendMarker(effect.to, effect.marker);
        return;
      case 'send':
        peer(effect.to).send(
          (effect.message.type === 'sharding.token-answer'
            ? answerInOneFrame(effect.message, effect.to)
            : effect.message) as Message,
        );
        return;
      case 'fence':
        leases.fence(effect.key);
        return;
      case 'want-own-lease':
        leases.want(effect.active);
        return;
      case 'tokens-held':
        tokensDecided = effect.count;
        tellTokensHeld();
        return;
    }
  };

  const machineSetup = setup({
    types: { context: {} as KeeperContext, events: {} as KeeperEvent | GatherDue },
    actions: {
      run: (_, effect: KeeperEffect) => execute(effect),
      gathered: (_, count: number) => {
        tokensGathered = count;
        tellTokensHeld();
      },
      // the loss read by the clock (below) told to the lease's reporter too: it reports changes of
      // what it last told, and a renewal after a loss it never told would never be heard as a gain
      refreshLease: () => leases.refresh?.(),
    },
  });

  const step = machineSetup.enqueueActions(({ context, event, enqueue }) => {
    const arrival = arrive(context.gathered, event, gather);
    let ctx = context;
    if (arrival.gathered !== context.gathered) {
      ctx = { ...context, gathered: arrival.gathered };
      const next = ctx;
      enqueue.assign(() => next);
      enqueue({ type: 'gathered', params: arrival.gathered.length });
    }
    // the turn's end (a 0 ms timer) decides a gathering unless another event does first
    if (arrival.started) enqueue.raise({ type: GATHER_DUE }, { id: GATHER_DUE, delay: 0 });
    else if (context.gathered.length > 0 && arrival.gathered.length === 0 && event.type !== GATHER_DUE)
      enqueue.cancel(GATHER_DUE);
    if (arrival.decide.length === 0) return;
    const now = system.clock.now();
    let result: KeeperStep | undefined;
    // a loss is read, not waited for (the safety-critical direction); a gain comes as its event
    const onlyLease = arrival.decide.length === 1 && arrival.decide[0]!.type === 'keeper.lease';
    if (ctx.lease && !onlyLease && !leases.holdsOwn()) {
      result = decide(policy, ctx, { type: 'keeper.lease', held: false }, now);
      enqueueDecision(enqueue, ctx, result);
      ctx = result.context;
      // (sharding chaos, seed 39514: a renewal came right after the read, the reporter had told no
      // loss, and the keeper waited for a gain that never came; its partitions stayed inactive)
      enqueue({ type: 'refreshLease' });
    }
    for (const input of arrival.decide) {
      result = decide(policy, ctx, input, now);
      enqueueDecision(enqueue, ctx, result);
      ctx = result.context;
      // a hand-off lost on the way comes back at once, as if handed to us (its cargo is kept here)
      for (const effect of result.effects) {
        if (effect.kind !== 'take-back') continue;
        const handOff = unconfirmed.get(effect.partition);
        if (handOff === undefined) {
          system.logger.warn(
            { event: 'sharding.hand-off-missing', partition: effect.partition },
            'a lost hand-off to take back is no longer kept',
          );
          continue;
        }
        result = decide(policy, ctx, { type: 'keeper.taken-back', handOff }, now);
        enqueueDecision(enqueue, ctx, result);
        ctx = result.context;
      }
    }
    if (result === undefined) return;
    enqueue.cancel(WAKE);
    if (result.wakeInMs !== null) enqueue.raise({ type: WAKE }, { id: WAKE, delay: result.wakeInMs });
  });

  return machineSetup.createMachine({
    id: 'partitionKeeper',
    context: initialKeeperContext,
    initial: 'running',
    states: {
      running: {
        on: {
          'keeper.table': { actions: step },
          'keeper.membership': { actions: step },
          'keeper.lease': { actions: step },
          'keeper.fenced': { actions: step },
          'keeper.region-drained': { actions: step },
          'keeper.tick': { actions: step },
          [GATHER_DUE]: { actions: step },
          'sharding.token-query': { actions: step },
          'sharding.token-withdraw': { actions: step },
          'sharding.token-answer': { actions: step },
          'sharding.hand-off': { actions: step },
          'sharding.drain-marker': { actions: step },
          'sharding.farewell': { actions: step },
          'sharding.active': { actions: step },
          'sharding.hand-off-part': { actions: step },
          'sharding.hand-off-probe': { actions: step },
          'sharding.hand-off-receipt': { actions: step },
          'sharding.marker-request': { actions: step },
        },
      },
    },
  });
}

export interface PartitionKeeperOptions {
  readonly system: ActorSystem;
  readonly cluster: Cluster;
  /** The agreed table (PartitionService.subscribe / table). */
  readonly tables: {
    table(): PartitionTable | undefined;
    subscribe(listener: (table: PartitionTable) => void): () => void;
  };
  readonly partitionCount: number;
  readonly leases: OwnerLeasePort;
  readonly host: KeeperHost;
  /** Default 16. */
  readonly maxConcurrentHandOffs?: number;
  /** Default 200 ms. */
  readonly retryMs?: number;
  /** Encoded bytes per hand-off part (default 128 KiB). */
  readonly handOffPartBytes?: number;
  /** Decide hand-offs arriving back to back in one step (default true; false: the control). */
  readonly gatherHandOffs?: boolean;
  /** false: this node lacks the partitions' role and bids for no owner lease (KeeperPolicy.mayOwn). */
  readonly mayOwn?: boolean;
}

const LIVE: readonly string[] = ['joining', 'up', 'leaving', 'exiting'];

/**
 * Spawns this node's keeper at KEEPER_PATH and feeds it: tables, this node's view (reachable
 * members; unreachable, downed and removed ones as `absent`, until fenced), the owner lease's
 * changes and fences. Returns the inbox the runtime reports to.
 */
export function startPartitionKeeper(options: PartitionKeeperOptions): KeeperInbox {
  const { system, cluster, leases } = options;
  if (!system.messageTypes.types().includes('sharding.hand-off')) registerKeeperMessages(system.messageTypes);
  const selfKey = nodeKey(system.node);
  const activeHere = new Set<number>();
  let unconfirmedHandOffs = 0;
  let tokensHeld = 0;
  // every key the keeper asked to fence: one it never saw as a member (a token handed to an
  // incarnation that was downed and restarted before this one joined) must hear its fence too,
  // or the partitions handed to it are never recreated (found by the chaos runner, seeds 2, 29)
  const fenceAsked = new Set<string>();
  const leasesSeen: OwnerLeasePort = {
    want: (active) => leases.want(active),
    holdsOwn: () => leases.holdsOwn(),
    fence: (key) => {
      fenceAsked.add(key);
      leases.fence(key);
    },
    isFenced: (key) => leases.isFenced(key),
    subscribe: (listener) => leases.subscribe(listener),
    ...(leases.refresh ? { refresh: () => leases.refresh?.() } : {}),
  };
  const policy: KeeperPolicy = {
    selfKey,
    partitionCount: options.partitionCount,
    maxConcurrentHandOffs: options.maxConcurrentHandOffs ?? 16,
    retryMs: options.retryMs ?? 200,
    ...(options.mayOwn === false ? { mayOwn: false } : {}),
  };
  const ref = system.spawn(
    createKeeperMachine({
      system,
      policy,
      host: options.host,
      leases: leasesSeen,
      onActive: (p, on) => (on ? activeHere.add(p) : activeHere.delete(p)),
      onUnconfirmed: (count) => {
        unconfirmedHandOffs = count;
      },
      onTokensHeld: (count) => {
        tokensHeld = count;
      },
      ...(options.handOffPartBytes !== undefined ? { handOffPartBytes: options.handOffPartBytes } : {}),
      ...(options.gatherHandOffs !== undefined ? { gatherHandOffs: options.gatherHandOffs } : {}),
    }),
    { name: KEEPER_PATH.split('/')[2]!, parent: 'system' },
  );
  const send = (event: KeeperEvent) => ref.send(event as KeeperEvent & Message);

  // members seen and gone (removed or downed) stay absent until fenced: they may hold a token
  const gone = new Set<string>();
  let seen = new Set<string>();
  const fencedSent = new Set<string>();
  const skipFence = unsafeSkipFence();
  if (skipFence)
    system.logger.warn(
      { event: 'sharding.unsafe-skip-fence', variable: UNSAFE_SKIP_FENCE_ENV },
      `${UNSAFE_SKIP_FENCE_ENV}=1: members out of reach count as fenced at once (a test's positive control, never safe)`,
    );
  const tellView = (m: Membership) => {
    const unreachable = new Set(cluster.unreachableHere());
    const live = m.members.filter((x) => LIVE.includes(x.status)).map(memberKey);
    for (const k of seen) if (!live.includes(k)) gone.add(k);
    seen = new Set(live);
    for (const k of gone) if (leases.isFenced(k)) gone.delete(k);
    const reachable = live.filter((k) => !unreachable.has(k));
    const absent = [...live.filter((k) => unreachable.has(k)), ...gone];
    send({ type: 'keeper.membership', reachable, absent });
    // the chaos runner's positive control only (unsafe-skip-fence.ts): absent counts as fenced
    if (skipFence)
      for (const k of absent) {
        if (fencedSent.has(k)) continue;
        fencedSent.add(k);
        send({ type: 'keeper.fenced', key: k });
      }
  };
  const tellTable = (t: PartitionTable) =>
    send({ type: 'keeper.table', table: { version: t.version, owners: t.owners } });
  const tellLease = () => {
    send({ type: 'keeper.lease', held: leases.holdsOwn() });
    for (const k of new Set([...seen, ...gone, ...fenceAsked])) {
      if (fencedSent.has(k) || !leases.isFenced(k)) continue;
      fencedSent.add(k);
      fenceAsked.delete(k);
      send({ type: 'keeper.fenced', key: k });
    }
  };
  const current = cluster.state().membership;
  if (current) tellView(current);
  const unsubscribers = [
    cluster.subscribeMembership(tellView),
    cluster.subscribe((event) => {
      const m = cluster.state().membership;
      if ((event.type === 'member.unreachable' || event.type === 'member.reachable') && m) tellView(m);
    }),
    options.tables.subscribe(tellTable),
    leases.subscribe(tellLease),
  ];
  const table = options.tables.table();
  if (table) tellTable(table);
  tellLease();
  // the runtime reads the lease by the clock on its message path: a lapse it finds (it stopped
  // the partitions already) is the keeper's to decide now, not when the lease-end report comes
  options.host.guardDelivery?.({
    holdsOwn: () => leases.holdsOwn(),
    lapsed: () => (leases.refresh ? leases.refresh() : tellLease()),
  });

  return {
    regionDrained: (partition) => send({ type: 'keeper.region-drained', partition }),
    received: (message) => send(message as KeeperMessage),
    isActive: (partition) => activeHere.has(partition),
    activePartitions: () => [...activeHere].sort((a, b) => a - b),
    unconfirmedHandOffs: () => unconfirmedHandOffs,
    tokensHeld: () => tokensHeld,
    stop() {
      for (const u of unsubscribers) u();
      system.stop(ref);
    },
  };
}
