// The sharding bench's load generator: runs inside a proxy-only `doyen node` (no `shard` role: it
// hosts no entity, every message it sends crosses the wire to the entity's owner) and answers the
// bench on a small HTTP control port. Every figure about latency is measured here, outside the
// nodes that move partitions. Times are wall-clock ms (performance.timeOrigin + performance.now()),
// the clock the nodes' log lines and the bench's kill times use.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import {
  type ActorRef,
  type Message,
  nodeOfKey,
  type UniqueNodeAddress,
} from '../../packages/core/src/index.js';
import type { DoyenNode, ShardedEntities } from '../../packages/doyen/src/index.js';
import {
  type AddedReply,
  type CounterEvent,
  entityId,
  FANOUT_SINKS,
  fanoutSinkName,
  rememberedId,
  SHARD_ROLE,
  SINK_PATH,
  type StateReply,
} from './sharding-protocol.js';

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Paced sends run on a 5 ms tick, carrying the fractional remainder over. */
const TICK_MS = 5;
/** Cold activations are paced on the finest tick timers give (a burst's queue is not an activation's latency). */
const COLD_TICK_MS = 0;

type Counters = ShardedEntities<CounterEvent & Message>;

/** One cold ask split at the process boundaries (ms; see `LoadGenerator.cold`). */
export interface ColdTrace {
  /** Its index in the sequence (asks are due `1000 / rate` ms apart). */
  readonly i: number;
  /** When it was sent (wall-clock ms). */
  readonly t: number;
  /** Sent this long after its due time (the pacing loop's own delay). */
  readonly late: number;
  /** Sent here → handled by the entity on its owner (both wall clocks on this machine). */
  readonly out: number;
  /** The entity's reply → its answer here. */
  readonly back: number;
  /** The owner's process id. */
  readonly pid: number;
}

interface Steady {
  readonly timer: NodeJS.Timeout;
  readonly indices: readonly number[];
}

export class LoadGenerator {
  private node: DoyenNode | undefined;
  private counters: Counters | undefined;
  /** The cold figure's type (activations logged at debug, as an app has them). */
  private coldCounters: Counters | undefined;
  /** Its warm-up's type (passivated soon after, see COLD_WARMUP_TYPE). */
  private warmupCounters: Counters | undefined;
  /** The remembered type, when the nodes have a store. */
  private remembered: Counters | undefined;
  /** Per entity index: `sb.add` messages sent (its next sequence number is one more). */
  private readonly sent: number[] = [];
  /** The steady load's samples: send time and latency (ms; -1 when the ask failed). */
  private readonly t: number[] = [];
  private readonly ms: number[] = [];
  /** Per sample: the entity index asked (which partition a slow ask waited on). */
  private readonly e: number[] = [];
  private readonly errors = new Map<string, number>();
  private steady: Steady | undefined;
  private pending = 0;

  attach(
    node: DoyenNode,
    types: { counters: Counters; cold: Counters; warmup: Counters; remembered: Counters | undefined },
  ): void {
    this.node = node;
    this.counters = types.counters;
    this.coldCounters = types.cold;
    this.warmupCounters = types.warmup;
    this.remembered = types.remembered;
  }

  /** `sb.get` once to each remembered id `rememberedId(i)` of `indices` at `rate`/s: activates them. */
  async activateRemembered(
    indices: readonly number[],
    rate: number,
    timeoutMs: number,
  ): Promise<{ answered: number; failed: number }> {
    const remembered = this.remembered;
    if (!remembered) throw new Error('the nodes have no remember store (no remembered type)');
    const results = await this.paced(indices.length, rate, (k) =>
      this.get(rememberedId(indices[k]!), timeoutMs, remembered).then(
        () => true,
        () => false,
      ),
    );
    const answered = results.filter(Boolean).length;
    return { answered, failed: results.length - answered };
  }

  private get live(): { node: DoyenNode; counters: Counters } {
    if (!this.node || !this.counters) throw new Error('the load generator has no node yet');
    return { node: this.node, counters: this.counters };
  }

  /** One counted `sb.add` to entity `i`: resolves with its latency, or -1 when it failed. */
  private async add(i: number, timeoutMs: number): Promise<number> {
    const seq = (this.sent[i] = (this.sent[i] ?? 0) + 1);
    const start = performance.now();
    this.pending++;
    try {
      await this.live.counters
        .ref(entityId(i))
        .ask<AddedReply>((replyTo) => ({ type: 'sb.add', seq, replyTo }), { timeout: timeoutMs });
      return performance.now() - start;
    } catch (error) {
      const key = error instanceof Error ? error.message.slice(0, 120) : String(error);
      this.errors.set(key, (this.errors.get(key) ?? 0) + 1);
      return -1;
    } finally {
      this.pending--;
    }
  }

  private get(id: string, timeoutMs: number, counters = this.live.counters): Promise<StateReply> {
    return counters
      .ref(id)
      .ask<StateReply>((replyTo) => ({ type: 'sb.get', replyTo }), { timeout: timeoutMs });
  }

  /** Steady asks at `rate`/s, round robin over `indices`, every one sampled. */
  startSteady(indices: readonly number[], rate: number, timeoutMs: number): void {
    this.stopTimer();
    let cursor = 0;
    let credit = 0;
    let last = performance.now();
    const timer = setInterval(() => {
      const at = performance.now();
      credit += ((at - last) * rate) / 1000;
      last = at;
      for (; credit >= 1; credit--) {
        const i = indices[cursor++ % indices.length]!;
        const sentAt = now();
        const slot = this.t.push(sentAt) - 1;
        this.ms.push(Number.NaN);
        this.e.push(i);
        void this.add(i, timeoutMs).then((ms) => {
          this.ms[slot] = ms < 0 ? -1 : Math.round(ms * 100) / 100;
        });
      }
    }, TICK_MS);
    this.steady = { timer, indices };
  }

  private stopTimer(): void {
    if (this.steady) clearInterval(this.steady.timer);
    this.steady = undefined;
  }

  /** Stops the steady load and waits (bounded) for its asks to settle. */
  async stopSteady(waitMs: number): Promise<{ pending: number }> {
    this.stopTimer();
    const until = performance.now() + waitMs;
    while (this.pending > 0 && performance.now() < until) await sleep(20);
    return { pending: this.pending };
  }

  samples(from: number): {
    next: number;
    t: number[];
    ms: number[];
    e: number[];
    errors: Record<string, number>;
  } {
    const to = this.t.length;
    return {
      next: to,
      t: this.t.slice(from, to),
      e: this.e.slice(from, to),
      // not settled yet: NaN, which JSON writes as null
      ms: this.ms.slice(from, to),
      errors: Object.fromEntries(this.errors),
    };
  }

  /** `sb.add` to entities 0..count-1 once each at `rate`/s (the population's activation). */
  async activate(
    count: number,
    rate: number,
    timeoutMs: number,
  ): Promise<{ answered: number; failed: number }> {
    const results = await this.paced(count, rate, (i) => this.add(i, timeoutMs));
    const failed = results.filter((ms) => ms < 0).length;
    return { answered: count - failed, failed };
  }

  /** Asks every entity 0..count-1 its state and compares it with what was sent to it. */
  async verify(
    count: number,
    rate: number,
    timeoutMs: number,
  ): Promise<{
    checked: number;
    lost: number;
    duplicated: number;
    outOfOrder: number;
    unanswered: number;
    stateResets: number;
    countedBeforeReset: number;
  }> {
    const figures = {
      checked: 0,
      lost: 0,
      duplicated: 0,
      outOfOrder: 0,
      unanswered: 0,
      stateResets: 0,
      countedBeforeReset: 0,
    };
    await this.paced(count, rate, async (i) => {
      const state = await this.get(entityId(i), timeoutMs).catch(() => undefined);
      if (!state) {
        figures.unanswered++;
        return;
      }
      const sent = this.sent[i] ?? 0;
      figures.checked++;
      // a state that began after seq 1 lost what came before it (not a message lost on the way)
      const before = state.first > 1 ? state.first - 1 : 0;
      if (before > 0) figures.stateResets++;
      figures.countedBeforeReset += before;
      figures.lost += Math.max(0, sent - before - state.count);
      figures.duplicated += Math.max(0, state.count + before - sent);
      figures.outOfOrder += state.outOfOrder;
    });
    return figures;
  }

  /**
   * Asks each entity of `indices` again and again (`everyMs` apart, each ask `timeoutMs`) from
   * `since` on; per entity, how long after `since` the first answer to an ask sent after it came.
   */
  async probe(
    indices: readonly number[],
    since: number,
    everyMs: number,
    timeoutMs: number,
    durationMs: number,
  ): Promise<{ recoveredMs: number[]; unrecovered: number }> {
    const deadline = since + durationMs;
    const recoveredMs: number[] = [];
    let unrecovered = 0;
    await Promise.all(
      indices.map(async (i, k) => {
        // spread the first asks over one period, so the probes do not come in a burst
        await sleep((k * everyMs) / indices.length);
        while (now() < deadline) {
          const sentAt = now();
          const answered = await this.get(entityId(i), timeoutMs).then(
            () => true,
            () => false,
          );
          if (answered && sentAt >= since) {
            recoveredMs.push(now() - since);
            return;
          }
          await sleep(Math.max(0, everyMs - (now() - sentAt)));
        }
        unrecovered++;
      }),
    );
    return { recoveredMs, unrecovered };
  }

  /**
   * `sb.get` to `count` fresh ids at `rate`/s: every ask activates an entity; latencies in ms. Each
   * ask is split where it crosses the processes (the entity stamps its reply with its node's wall
   * clock): `late` (this loop sent it after its due time), `out` (sent → handled by the entity:
   * two wire hops, the owner's region and the activation) and `back` (reply → answered here).
   */
  async cold(
    prefix: string,
    count: number,
    rate: number,
    timeoutMs: number,
    warmup = false,
  ): Promise<{ ms: number[]; failed: number; trace: ColdTrace[] }> {
    const type = warmup ? this.warmupCounters : this.coldCounters;
    const trace: ColdTrace[] = [];
    const start = performance.now();
    const results = await this.paced(
      count,
      rate,
      async (i) => {
        const sentAt = performance.now();
        const late = sentAt - (start + (i * 1000) / rate);
        const reply = await this.get(`${prefix}${i}`, timeoutMs, type).catch(() => undefined);
        if (!reply) return -1;
        const answeredAt = performance.now();
        const sentWall = performance.timeOrigin + sentAt;
        const at = reply.at ?? Number.NaN;
        trace.push({
          i,
          t: sentWall,
          late,
          out: at - sentWall,
          back: performance.timeOrigin + answeredAt - at,
          pid: reply.pid ?? -1,
        });
        return answeredAt - sentAt;
        // a steady rate: a 5 ms tick would send 25 first messages at once at 5k/s, and measure the
        // burst's queue rather than the activation
      },
      COLD_TICK_MS,
    );
    return {
      ms: results.filter((ms) => ms >= 0),
      failed: results.filter((ms) => ms < 0).length,
      trace: trace.sort((a, b) => a.i - b.i),
    };
  }

  /**
   * `sb.get` asks at `rate`/s to plain actors on the hosting nodes (their fan-out sinks, round
   * robin): the same round trip as `cold` without sharding or an activation; latencies in ms.
   */
  async plainAsks(count: number, rate: number, timeoutMs: number): Promise<{ ms: number[]; failed: number }> {
    const sinks = this.fanoutSinks(count);
    const results = await this.paced(
      count,
      rate,
      async (i) => {
        const start = performance.now();
        const ok = await sinks[i % sinks.length]!.ask<StateReply>(
          (replyTo) => ({ type: 'sb.get', replyTo }),
          { timeout: timeoutMs },
        ).then(
          () => true,
          () => false,
        );
        return ok ? performance.now() - start : -1;
      },
      COLD_TICK_MS,
    );
    return { ms: results.filter((ms) => ms >= 0), failed: results.filter((ms) => ms < 0).length };
  }

  /** The hosting nodes (members up with the shard role). */
  private hosts(): UniqueNodeAddress[] {
    const members = this.live.node.cluster.state().membership?.members ?? [];
    return members
      .filter((m) => m.status === 'up' && m.roles.includes(SHARD_ROLE))
      .map((m) => nodeOfKey(`${m.address}#${m.uid}`));
  }

  /** `count` plain fan-out sinks (at most FANOUT_SINKS per hosting node), actor k on host k mod n. */
  private fanoutSinks(count: number): ActorRef<CounterEvent & Message>[] {
    const hosts = this.hosts();
    return Array.from({ length: Math.min(count, FANOUT_SINKS * hosts.length) }, (_, k) =>
      this.live.node.system.remoteRef<CounterEvent & Message>(
        hosts[k % hosts.length]!,
        `/user/${fanoutSinkName(Math.floor(k / hosts.length))}`,
      ),
    );
  }

  /**
   * Sharded tell across the hosting nodes against plain remote tell, alternating, `rounds` each:
   * to one sink actor per hosting node (the wire's best case) and to `entities` plain actors over
   * the hosting nodes (the sharded tell's fan-out: what sharding adds, isolated). A round is
   * `messages` tells, then an ask to every node's sink (it answers after the tells its node got
   * before it), messages delivered per second.
   */
  async throughput(
    entities: number,
    messages: number,
    rounds: number,
  ): Promise<{
    sharded: number[];
    plain: number[];
    plainFanout: number[];
    delivered: { sharded: number; plain: number; plainFanout: number };
  }> {
    const { node, counters } = this.live;
    const sinks = this.hosts().map((n) => node.system.remoteRef<CounterEvent & Message>(n, SINK_PATH));
    const fanout = this.fanoutSinks(entities);
    const refs: ActorRef<CounterEvent & Message>[] = Array.from({ length: entities }, (_, k) =>
      counters.ref(`tp-${k}`),
    );
    const targets = { sharded: refs, plain: sinks, plainFanout: fanout };
    type Kind = keyof typeof targets;
    // per node: its plain sinks' tells, and (as `count`) what the node's counter entities handled
    const tallies = async () => {
      const states = await Promise.all(
        sinks.map((r) => r.ask<StateReply>((replyTo) => ({ type: 'sb.get', replyTo }), { timeout: 10_000 })),
      );
      const plain = states.reduce((sum, s) => sum + s.tells, 0);
      return { plain, plainFanout: plain, sharded: states.reduce((sum, s) => sum + s.count, 0) };
    };
    const round = async (kind: Kind) => {
      const to = targets[kind];
      const before = (await tallies())[kind];
      const start = performance.now();
      for (let m = 0; m < messages; m++) {
        to[m % to.length]!.send({ type: 'sb.tell' });
        if (m % 2000 === 1999) await new Promise((resolve) => setImmediate(resolve));
      }
      // the sinks' answers may overtake the other actors' messages: asked until all arrived (bounded)
      let delivered = (await tallies())[kind] - before;
      const until = performance.now() + 60_000;
      while (delivered < messages && performance.now() < until) {
        await sleep(2);
        delivered = (await tallies())[kind] - before;
      }
      return { rate: delivered / ((performance.now() - start) / 1000), delivered };
    };
    const order: Kind[] = ['plain', 'plainFanout', 'sharded'];
    // the first round of each activates the entities and warms the paths up
    for (const kind of order) await round(kind);
    const rates = { sharded: [] as number[], plain: [] as number[], plainFanout: [] as number[] };
    const delivered = { sharded: 0, plain: 0, plainFanout: 0 };
    for (let r = 0; r < rounds; r++)
      for (const kind of order) {
        const x = await round(kind);
        rates[kind].push(x.rate);
        delivered[kind] += x.delivered / messages / rounds;
      }
    return { ...rates, delivered };
  }

  /** Runs `task(i)` for i in 0..count-1, started at `rate`/s; resolves with every result, in order. */
  private async paced<T>(
    count: number,
    rate: number,
    task: (i: number) => Promise<T>,
    tickMs = TICK_MS,
  ): Promise<T[]> {
    const runs: Promise<T>[] = [];
    const start = performance.now();
    for (let i = 0; i < count; i++) {
      const due = start + (i * 1000) / rate;
      const wait = due - performance.now();
      if (wait > tickMs) await sleep(wait);
      runs.push(task(i));
    }
    return Promise.all(runs);
  }
}

type Handler = (body: Record<string, any>, url: URL) => Promise<unknown> | unknown;

/** The generator and its control server on 127.0.0.1:`port` (POST JSON in, JSON out). */
export function startLoadGenerator(port: number): LoadGenerator {
  const load = new LoadGenerator();
  const routes: Record<string, Handler> = {
    '/ready': () => ({ ready: true }),
    '/steady': (b) =>
      load.startSteady(
        b.indices ?? Array.from({ length: b.count as number }, (_, i) => i),
        b.rate,
        b.timeoutMs ?? 5000,
      ),
    '/steady/stop': (b) => load.stopSteady(b.waitMs ?? 10_000),
    '/samples': (_, url) => load.samples(Number(url.searchParams.get('from') ?? 0)),
    '/activate': (b) => load.activate(b.count, b.rate, b.timeoutMs ?? 10_000),
    '/verify': (b) => load.verify(b.count, b.rate, b.timeoutMs ?? 10_000),
    '/probe': (b) => load.probe(b.indices, b.since, b.everyMs, b.timeoutMs, b.durationMs),
    '/cold': (b) => load.cold(b.prefix, b.count, b.rate, b.timeoutMs ?? 5000, b.warmup === true),
    '/remembered/activate': (b) => load.activateRemembered(b.indices, b.rate, b.timeoutMs ?? 10_000),
    '/plain-asks': (b) => load.plainAsks(b.count, b.rate, b.timeoutMs ?? 5000),
    '/throughput': (b) => load.throughput(b.entities, b.messages, b.rounds),
  };
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    const chunks: Buffer[] = [];
    request.on('data', (c: Buffer) => chunks.push(c));
    request.on('end', () => {
      const route = routes[url.pathname];
      const reply = (status: number, body: unknown) => {
        response.writeHead(status, { 'content-type': 'application/json' });
        response.end(JSON.stringify(body ?? {}));
      };
      if (!route) return reply(404, { error: `no route ${url.pathname}` });
      let body: Record<string, any> = {};
      try {
        body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {};
      } catch {
        return reply(400, { error: 'body is not JSON' });
      }
      Promise.resolve()
        .then(() => route(body, url))
        .then(
          (result) => reply(200, result),
          (error: unknown) => reply(500, { error: error instanceof Error ? error.message : String(error) }),
        );
    });
  });
  server.listen(port, '127.0.0.1');
  server.unref();
  return load;
}
