import { describe, expect, it } from 'vitest';
import { createActor, SimulatedClock } from 'xstate';
import { getShortestPaths } from 'xstate/graph';
import type { ActorSystem, Message } from '../../packages/core/src/index.js';
import { GATHER_DUE, type GatherDue } from '../../packages/sharding/src/partition-keeper/hand-off-gather.js';
import type {
  KeeperContext,
  KeeperEffect,
  KeeperEvent,
} from '../../packages/sharding/src/partition-keeper/keeper-decisions.js';
import {
  EMPTY_CARGO,
  type KeeperHost,
  type OwnerLeasePort,
} from '../../packages/sharding/src/partition-keeper/keeper-host.js';
import { createKeeperMachine } from '../../packages/sharding/src/partition-keeper/keeper-machine.js';

/**
 * The partition keeper's machine alone: events in, effects out. Its decisions read nothing but
 * their events (the owner lease comes in as events here: the stub lease always holds, so the
 * machine's own read of it never fires), so every path through the abstract states its context
 * takes can be enumerated with xstate/graph and replayed, and the activation rule checked on each.
 */

const SELF = '10.0.0.1:2552#u1';
const B = '10.0.0.2:2552#u2';
const C = '10.0.0.3:2552#u3';

const system = {
  node: { host: '10.0.0.1', port: 2552, uid: 'u1' },
  logger: { info() {}, warn() {}, debug() {}, error() {} },
  metrics: { inc() {} },
  clock: { now: () => 0 },
  remoteRef: () => ({ send() {} }),
} as unknown as ActorSystem;

const host: KeeperHost = {
  activate() {},
  drain() {},
  takeCargo: () => EMPTY_CARGO,
  reroute() {},
  deactivate() {},
  startBuffering() {},
  flush() {},
  sendMarker() {},
};

const leases: OwnerLeasePort = {
  want() {},
  holdsOwn: () => true,
  fence() {},
  isFenced: () => false,
  subscribe: () => () => {},
};

// the graph walks the decisions' paths one event a step (gathering on, a hand-off is decided on
// the next event or the turn's end; keeper-hand-off-gather.test.ts checks that path)
const machine = (gatherHandOffs = false) =>
  createKeeperMachine({
    system,
    policy: { selfKey: SELF, partitionCount: 2, maxConcurrentHandOffs: 1, retryMs: 100 },
    host,
    leases,
    gatherHandOffs,
  });

const none = { seen: null, handed: null, dormant: null };
const EVENTS: KeeperEvent[] = [
  { type: 'keeper.table', table: { version: 1, owners: [SELF, B] } },
  { type: 'keeper.table', table: { version: 2, owners: [B, SELF] } },
  { type: 'keeper.membership', reachable: [B, C], absent: [] },
  { type: 'keeper.membership', reachable: [B], absent: [C] },
  { type: 'keeper.lease', held: true },
  { type: 'keeper.lease', held: false },
  { type: 'keeper.fenced', key: C },
  { type: 'keeper.region-drained', partition: 0 },
  // the answers to this node's first query (round 1, table 1: partition 0)
  {
    type: 'sharding.token-answer',
    from: B,
    version: 1,
    round: 1,
    newer: null,
    answers: [{ partition: 0, ...none }],
  },
  {
    type: 'sharding.token-answer',
    from: C,
    version: 1,
    round: 1,
    newer: null,
    answers: [{ partition: 0, ...none }],
  },
  // B, owner of partition 0 in table 2, asks for it
  { type: 'sharding.token-query', from: B, version: 2, round: 1, partitions: [0] },
  // B hands partition 1's token over under table 2
  {
    type: 'sharding.hand-off',
    from: B,
    partition: 1,
    stamp: { version: 1, round: 1, seq: 1 },
    version: 2,
    cargo: EMPTY_CARGO,
  },
  { type: 'sharding.drain-marker', from: B, version: 2, active: [] },
  { type: 'sharding.drain-marker', from: C, version: 2, active: [] },
  { type: 'sharding.active', from: B, version: 2, partitions: [0] },
];

/** The events a path took that the decisions see (not xstate's own, not the gathering's timer). */
const isKeeperEvent = (e: KeeperEvent | GatherDue): e is KeeperEvent =>
  !e.type.startsWith('xstate.') && e.type !== GATHER_DUE;

/**
 * The context as the graph walk tells states apart: all of it but the retry clock, the fences
 * asked and what senders heard of other owners' activations (which only decide when a buffer
 * flushes, an effect the checks below do not judge).
 */
const abstract = (ctx: KeeperContext) =>
  JSON.stringify({
    ...ctx,
    lastRetryAt: 0,
    fenceAsked: {},
    parts: Object.fromEntries(Object.entries(ctx.parts).map(([p, s]) => [p, { ...s, activeAt: null }])),
  });

interface Recorded {
  readonly effect: KeeperEffect;
  readonly event: KeeperEvent;
  readonly after: KeeperContext;
}

function replay(events: readonly KeeperEvent[]) {
  const effects: Recorded[] = [];
  let current: KeeperEvent | undefined;
  const pending: KeeperEffect[] = [];
  const logic = machine().provide({
    actions: { run: (_, effect: KeeperEffect) => void pending.push(effect) },
  });
  const actor = createActor(logic, { clock: new SimulatedClock() });
  actor.start();
  const contexts: KeeperContext[] = [];
  const steps: { event: KeeperEvent; effects: KeeperEffect[]; after: KeeperContext }[] = [];
  for (const event of events) {
    current = event;
    actor.send(event);
    const after = actor.getSnapshot().context;
    contexts.push(after);
    const mine = pending.splice(0);
    steps.push({ event, effects: mine, after });
    for (const effect of mine) effects.push({ effect, event: current, after });
  }
  return { actor, effects, contexts, steps };
}

describe('partition keeper machine, alone', () => {
  const paths = getShortestPaths(machine().provide({ actions: { run: () => {} } }), {
    events: EVENTS,
    serializeState: (s) => abstract(s.context),
  });

  it('reaches every phase: a token created, held, active, draining, drained, handed off; buffers flushed; fences asked', () => {
    const phases = new Set<string>();
    const kinds = new Set<string>();
    for (const path of paths) {
      for (const part of Object.values(path.state.context.parts))
        if (part.token) phases.add(part.token.phase);
    }
    for (const path of paths.slice(0, 4000)) {
      const events = path.steps.map((s) => s.event).filter(isKeeperEvent);
      for (const { effect } of replay(events).effects)
        kinds.add(effect.kind === 'log' ? effect.event : effect.kind);
    }
    expect([...phases].sort()).toEqual(['active', 'drained', 'draining', 'held']);
    for (const k of [
      'sharding.token-created',
      'activate',
      'drain',
      'hand-off',
      'flush',
      'fence',
      'deactivate',
      'marker',
    ])
      expect(kinds, k).toContain(k);
    console.log(`${paths.length} paths`);
    expect(paths.length).toBeGreaterThan(200);
  });

  it('on every path: active only with the lease, as owner in the newest table, with the token; once at a time; hand-offs only drained, marked, to the newest owner', () => {
    let checked = 0;
    for (const path of paths) {
      const events = path.steps.map((s) => s.event).filter(isKeeperEvent);
      const { steps, contexts } = replay(events);
      const effects = steps.flatMap((st) => [
        { effect: null, event: st.event, after: st.after },
        ...st.effects.map((effect) => ({ effect, event: st.event, after: st.after })),
      ]);
      expect(abstract(contexts.at(-1) ?? path.state.context)).toBe(abstract(path.state.context));
      const running = new Map<number, number>();
      const drained = new Set<number>();
      for (const { effect, event, after } of effects) {
        if (effect === null) {
          if (event.type === 'keeper.region-drained') drained.add(event.partition);
          continue;
        }
        if ('to' in effect) expect(effect.to).not.toBe(SELF);
        switch (effect.kind) {
          case 'activate': {
            const p = effect.partition;
            running.set(p, (running.get(p) ?? 0) + 1);
            expect(running.get(p), `p${p} activated twice`).toBe(1);
            expect(after.lease, 'activated without the owner lease').toBe(true);
            expect(after.table?.owners[p], 'activated while not owner in the newest table').toBe(SELF);
            expect(after.parts[p]?.token?.phase).toBe('active');
            break;
          }
          case 'drain':
          case 'deactivate':
            running.set(effect.partition, 0);
            drained.delete(effect.partition);
            break;
          case 'hand-off': {
            const p = effect.partition;
            expect(drained.has(p), `p${p} handed off before its region drained`).toBe(true);
            expect(effect.to).toBe(after.table?.owners[p]);
            for (const k of after.reachable)
              if (!after.fenced[k])
                expect(after.markers[k] ?? -1, `no marker from ${k}`).toBeGreaterThanOrEqual(1);
            expect(after.parts[p]?.token ?? null).toBeNull();
            drained.delete(p);
            break;
          }
        }
      }
      // the context agrees with what was run
      const last = contexts.at(-1);
      if (last) {
        for (let p = 0; p < 2; p++) {
          const active = last.parts[p]?.token?.phase === 'active';
          expect(running.get(p) ?? 0, `p${p} running vs context`).toBe(active ? 1 : 0);
          if (active) expect(last.lease).toBe(true);
        }
      }
      checked++;
    }
    expect(checked).toBe(paths.length);
  }, 120_000);

  it('a planned move out: drain, wait for every marker, then hand off with the newest table', () => {
    const { effects } = replay([
      { type: 'keeper.membership', reachable: [B, C], absent: [] },
      { type: 'keeper.lease', held: true },
      { type: 'keeper.table', table: { version: 1, owners: [SELF, B] } },
      EVENTS[8]!,
      EVENTS[9]!,
      { type: 'keeper.table', table: { version: 2, owners: [B, SELF] } },
      { type: 'keeper.region-drained', partition: 0 },
      { type: 'sharding.drain-marker', from: B, version: 2, active: [] },
      { type: 'sharding.drain-marker', from: C, version: 2, active: [] },
    ]);
    const kinds = effects
      .map((e) => e.effect)
      .filter((e) => e.kind === 'activate' || e.kind === 'drain' || e.kind === 'hand-off')
      .map((e) => `${e.kind} p${e.partition}`);
    expect(kinds).toEqual(['activate p0', 'drain p0', 'hand-off p0']);
    const handOff = effects.find((e) => e.effect.kind === 'hand-off')!;
    expect(handOff.event).toEqual({ type: 'sharding.drain-marker', from: C, version: 2, active: [] });
  });

  it('refuses a hand-off for a partition beyond the table and a table of the wrong size', () => {
    const { effects, contexts } = replay([
      { type: 'keeper.table', table: { version: 1, owners: [SELF, B, C] } },
      { type: 'keeper.table', table: { version: 1, owners: [SELF, B] } },
      {
        type: 'sharding.hand-off',
        from: B,
        partition: 7,
        stamp: { version: 1, round: 1, seq: 1 },
        version: 1,
        cargo: EMPTY_CARGO,
      },
    ]);
    expect(effects.some((e) => e.effect.kind === 'log' && e.effect.event === 'sharding.table-refused')).toBe(
      true,
    );
    expect(effects.some((e) => e.effect.kind === 'log' && e.effect.event === 'sharding.refused')).toBe(true);
    expect(contexts.at(-1)!.parts[7]).toBeUndefined();
  });
});

describe('partition keeper machine, its I/O', () => {
  /** The machine with its real `execute`, over a stub system that records what it sends and counts. */
  function wired(handOffPartBytes?: number) {
    const sent: { to: string; message: Message }[] = [];
    const counted: Record<string, number> = {};
    const warned: string[] = [];
    const stub = {
      ...system,
      logger: { ...system.logger, warn: (f: { event: string }) => void warned.push(f.event) },
      metrics: {
        inc: (_n: string, _h: string, labels: { event: string }, by = 1) =>
          void (counted[labels.event] = (counted[labels.event] ?? 0) + by),
      },
      remoteRef: (node: { host: string; port: number; uid: string }) => ({
        send: (message: Message) => void sent.push({ to: `${node.host}:${node.port}#${node.uid}`, message }),
      }),
    } as unknown as ActorSystem;
    const big = (n: number) => ({
      snapshots: Array.from({ length: n }, (_, i) => ({
        entityType: 'cart',
        entityId: `c${i}`,
        snapshot: { note: 'x'.repeat(200), i },
      })),
      forwarded: [],
    });
    const actor = createActor(
      createKeeperMachine({
        system: stub,
        policy: { selfKey: SELF, partitionCount: 2, maxConcurrentHandOffs: 1, retryMs: 100 },
        host: { ...host, takeCargo: () => big(3000) },
        leases,
        ...(handOffPartBytes !== undefined ? { handOffPartBytes } : {}),
      }),
      { clock: new SimulatedClock() },
    );
    actor.start();
    return { actor, sent, counted, warned, big };
  }

  it('sends a cargo over one frame in parts, keeps it until confirmed, and takes it back when a probe finds it lost', () => {
    const { actor, sent } = wired();
    for (const e of [
      { type: 'keeper.membership', reachable: [B, C], absent: [] },
      { type: 'keeper.lease', held: true },
      { type: 'keeper.table', table: { version: 1, owners: [SELF, B] } },
      EVENTS[8]!,
      EVENTS[9]!,
      { type: 'keeper.table', table: { version: 2, owners: [B, SELF] } },
      { type: 'keeper.region-drained', partition: 0 },
      { type: 'sharding.drain-marker', from: B, version: 2, active: [] },
    ] as KeeperEvent[])
      actor.send(e);
    sent.length = 0;
    actor.send({ type: 'sharding.drain-marker', from: C, version: 2, active: [] });
    const parts = sent.filter((s) => s.message.type === 'sharding.hand-off-part');
    expect(parts.length).toBeGreaterThan(3);
    expect(parts.every((s) => s.to === B)).toBe(true);
    const stamp = (parts[0]!.message as unknown as { stamp: { seq: number } }).stamp;
    sent.length = 0;
    const receipt = (received: boolean, s: object) =>
      ({
        type: 'sharding.hand-off-receipt',
        from: B,
        partition: 0,
        stamp: s,
        attempt: 0,
        received,
      }) as KeeperEvent;
    // lost on the way: taken back, drained again (the region adds what it held), handed one hop further
    actor.send(receipt(false, stamp));
    expect(actor.getSnapshot().context.parts[0]?.token?.phase).toBe('draining');
    actor.send({ type: 'keeper.region-drained', partition: 0 });
    const again = sent.filter((s) => s.message.type === 'sharding.hand-off-part');
    expect(again.length).toBeGreaterThan(parts.length);
    const next = (again[0]!.message as unknown as { stamp: { seq: number } }).stamp;
    expect(next.seq).toBe(stamp.seq + 1);
    actor.send(receipt(true, next));
    sent.length = 0;
    // forgotten once confirmed: a later "missing" takes nothing back
    actor.send(receipt(false, next));
    expect(sent).toHaveLength(0);
    expect(actor.getSnapshot().context.parts[0]?.token ?? null).toBeNull();
  });

  it('leaves a dormant cargo over one frame out of its answer, logged and counted', () => {
    const { actor, sent, counted, warned, big } = wired();
    const query = {
      type: 'sharding.token-query',
      from: B,
      version: 1,
      round: 2,
      partitions: [1],
    } as KeeperEvent;
    for (const e of [
      { type: 'keeper.membership', reachable: [B], absent: [] },
      { type: 'keeper.table', table: { version: 1, owners: [SELF, B] } },
      query,
      // a token older than that renounce: kept dormant, its cargo reported
      {
        type: 'sharding.hand-off',
        from: C,
        partition: 1,
        stamp: { version: 1, round: 1, seq: 1 },
        version: 1,
        cargo: big(3000),
      },
    ] as KeeperEvent[])
      actor.send(e);
    sent.length = 0;
    actor.send(query);
    const answer = sent.find((s) => s.message.type === 'sharding.token-answer')!.message as unknown as {
      answers: { dormant: { cargo: { snapshots: unknown[] } } }[];
    };
    expect(answer.answers[0]!.dormant.cargo.snapshots).toHaveLength(0);
    expect(warned).toContain('sharding.cargo-entry-dropped');
    expect(counted['cargo-entry-dropped']).toBe(3000);
    // positive control: a dormant cargo that fits goes in the answer whole
    const small = wired();
    for (const e of [
      { type: 'keeper.membership', reachable: [B], absent: [] },
      { type: 'keeper.table', table: { version: 1, owners: [SELF, B] } },
      query,
      {
        type: 'sharding.hand-off',
        from: C,
        partition: 1,
        stamp: { version: 1, round: 1, seq: 1 },
        version: 1,
        cargo: big(3),
      },
    ] as KeeperEvent[])
      small.actor.send(e);
    small.sent.length = 0;
    small.actor.send(query);
    const whole = small.sent.find((s) => s.message.type === 'sharding.token-answer')!
      .message as unknown as typeof answer;
    expect(whole.answers[0]!.dormant.cargo.snapshots).toHaveLength(3);
  });
});
