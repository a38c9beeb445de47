// doyen between two processes on 127.0.0.1: this process runs one node, a doyen-node-process child the
// other, and every figure is timed on messages that went through both nodes' wire.
import { setTimeout as sleep } from 'node:timers/promises';
import {
  BENCH_CLUSTER,
  BENCH_SECRET,
  type Heartbeat,
  type Inc,
  nowUs,
  PARENT_MESSAGE_TYPES,
  type Ping,
  type Pong,
} from './bench-messages.js';
import { type ActorRef, type NodeAddress, type WireConfig, WsTransport } from './doyen.js';
import { type DoyenPeer, startDoyenPeer } from './doyen-peer.js';
import type { Latency } from './raw-ws.js';
import { percentile, perSecond } from './stats.js';

/**
 * Tells are handed to the node in chunks, and only while the outbound queue to the child holds less than
 * this: half of `wire.userQueueCapacity` (200k), so no tell ever meets a full queue and becomes a dead letter.
 */
const MAX_QUEUED = 100_000;
/** Tells per event-loop turn for the throughput figure: big enough that the pacing costs nothing. */
const RATE_CHUNK = 10_000;
/**
 * Tells per turn while heartbeats are measured: ~2 ms of sending, about what one dispatcher turn of a
 * sending actor may take (its budget is 4 ms), so the load generator itself does not hold the parent's
 * event loop for tens of ms and the figure shows what doyen adds.
 */
const LOAD_CHUNK = 1_000;
const HEARTBEAT_EVERY_MS = 10;

export type HeartbeatFigures = {
  /** Heartbeat send (parent) to arrival in the `/system/hb` function actor (child), ms. */
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  heartbeats: number;
  /** How late the parent's 10 ms interval fired (p99 of gap - 10 ms): time a heartbeat waited to be sent. */
  timerLateP99Ms: number;
  /** User-lane tells/s alongside the heartbeats, until the child had counted them all (0 when idle). */
  userMsgsPerSec: number;
  /** p99 of the child's event-loop delay meanwhile, ms: how long its loop was held up at a time. */
  childLoopDelayP99Ms: number;
};

export type EchoKind = 'function' | 'actor';

const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

export class DoyenRemoteBench {
  private readonly counter: ActorRef<Inc>;
  private readonly echo: Record<EchoKind, ActorRef<Ping>>;
  private readonly heartbeat: ActorRef<Heartbeat>;
  private readonly child: NodeAddress;

  private constructor(
    private readonly transport: WsTransport,
    private readonly peer: DoyenPeer,
  ) {
    const system = transport.system;
    this.counter = system.refFor<Inc>(peer.addresses.counter);
    this.echo = {
      function: system.refFor<Ping>(peer.addresses.echo),
      actor: system.refFor<Ping>(peer.addresses.echoActor),
    };
    this.heartbeat = system.refFor<Heartbeat>(peer.addresses.heartbeat);
    this.child = this.counter.address.node;
  }

  /** `wire` and `childEnv` (see tls-bench-env.ts) configure both nodes, e.g. for mutual TLS. */
  static async start(
    wire: Partial<WireConfig> = {},
    childEnv: NodeJS.ProcessEnv = {},
  ): Promise<DoyenRemoteBench> {
    const transport = await WsTransport.start({
      cluster: BENCH_CLUSTER,
      host: '127.0.0.1',
      port: 0,
      wire: { secret: BENCH_SECRET, ...wire },
    });
    transport.system.messageTypes.register([...PARENT_MESSAGE_TYPES]);
    try {
      return new DoyenRemoteBench(transport, await startDoyenPeer(childEnv));
    } catch (error) {
      await transport.close();
      throw error;
    }
  }

  async close(): Promise<void> {
    await this.transport.close();
    await this.peer.stop();
  }

  /** msgs/s of `bench.inc` tells to the child's counter, timed until the child has counted the last one. */
  async tellRate(messages: number): Promise<number> {
    await this.peer.reset();
    const deadBefore = this.transport.system.deadLetters.count;
    const counted = this.peer.awaitCount(messages, 60_000);
    // Should sending fail first, this wait still settles (rejected) when the child stops: not unhandled.
    counted.catch(() => {});
    const start = process.hrtime.bigint();
    await this.tellPaced(messages, RATE_CHUNK);
    this.failOnDeadLetters(deadBefore);
    const reply = await counted;
    const rate = perSecond(messages, start, process.hrtime.bigint());
    this.verify(reply, messages, deadBefore);
    return rate;
  }

  /** Round trips (µs) of sequential asks to one of the child's echo actors, nothing else in flight. */
  async askLatency(kind: EchoKind, rounds: number): Promise<Latency> {
    const echo = this.echo[kind];
    const rtts: number[] = new Array(rounds);
    for (let i = 0; i < rounds; i++) {
      const start = process.hrtime.bigint();
      const pong = await echo.ask<Pong>((replyTo) => ({ type: 'bench.ping', n: i, replyTo }), {
        timeout: 5_000,
      });
      rtts[i] = Number(process.hrtime.bigint() - start) / 1_000;
      if (pong.n !== i) throw new Error(`pong ${pong.n} for ping ${i}`);
    }
    return { p50: percentile(rtts, 50), p99: percentile(rtts, 99) };
  }

  /**
   * A system-lane heartbeat every 10 ms for `durationMs`, while the user lane to the same child is kept
   * saturated with tells (`loaded`) or left idle; the child measures each heartbeat's delay.
   */
  async heartbeatDelay(durationMs: number, loaded: boolean): Promise<HeartbeatFigures> {
    await this.peer.reset(true);
    const deadBefore = this.transport.system.deadLetters.count;
    let seq = 0;
    const gapsMs: number[] = [];
    let last = performance.now();
    const timer = setInterval(() => {
      const now = performance.now();
      gapsMs.push(now - last);
      last = now;
      this.heartbeat.send({ type: 'bench.hb', seq: seq++, sentUs: nowUs() });
    }, HEARTBEAT_EVERY_MS);
    const start = performance.now();
    const deadline = start + durationMs;
    let tells = 0;
    try {
      if (loaded) {
        tells = await this.tellPaced(
          Number.POSITIVE_INFINITY,
          LOAD_CHUNK,
          () => performance.now() >= deadline,
        );
      } else await sleep(durationMs);
    } finally {
      clearInterval(timer);
    }
    this.failOnDeadLetters(deadBefore);
    this.verify(await this.peer.awaitCount(tells, 60_000), tells, deadBefore);
    const elapsedMs = performance.now() - start;
    const heartbeats = await this.peer.awaitHeartbeats(seq, 10_000);
    const delaysMs = heartbeats.delaysUs.map((us) => us / 1_000);
    return {
      p50Ms: percentile(delaysMs, 50),
      p99Ms: percentile(delaysMs, 99),
      maxMs: Math.max(...delaysMs),
      heartbeats: seq,
      timerLateP99Ms: Math.max(0, percentile(gapsMs, 99) - HEARTBEAT_EVERY_MS),
      userMsgsPerSec: tells / (elapsedMs / 1_000),
      childLoopDelayP99Ms: heartbeats.loopDelayP99Ms,
    };
  }

  /** Tells `bench.inc` with `n` from 0 up, `chunk` per turn, keeping the outbound queue under MAX_QUEUED. */
  private async tellPaced(messages: number, chunk: number, stop?: () => boolean): Promise<number> {
    let n = 0;
    while (n < messages && !stop?.()) {
      const room = MAX_QUEUED - this.transport.queued(this.child, 'user');
      const k = Math.min(room, chunk, messages - n);
      for (let i = 0; i < k; i++) this.counter.send({ type: 'bench.inc', n: n++ });
      await yieldToLoop();
    }
    return n;
  }

  /** A dropped tell means the child never reaches its count: fail now rather than at the timeout. */
  private failOnDeadLetters(deadBefore: number): void {
    const dead = this.transport.system.deadLetters.count - deadBefore;
    if (dead > 0) throw new Error(`${dead} tells became dead letters in the sending node`);
  }

  private verify(
    reply: { count: number; outOfOrder: number; deadLetters: number; rejected: number },
    expected: number,
    deadBefore: number,
  ): void {
    const dead = this.transport.system.deadLetters.count - deadBefore;
    if (reply.count !== expected || reply.outOfOrder !== 0 || dead !== 0 || reply.rejected !== 0) {
      throw new Error(
        `sent ${expected}, child counted ${reply.count} (${reply.outOfOrder} out of order, ` +
          `${reply.rejected} rejected), ${dead} dead letters here`,
      );
    }
  }
}
