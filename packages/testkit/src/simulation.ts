import { ActorSystem, type ActorSystemConfig, type Logger, silentLogger } from '@doyen/core';
import { InvariantViolationError, SimulationError, SimulationTimeoutError } from './errors.js';
import { captureLogger } from './log-capture.js';
import { ManualScheduler } from './manual-scheduler.js';
import { NodeGate } from './node-gate.js';
import { SeededRandom } from './seeded-random.js';
import { type NetworkFaults, type NodeLike, nameOfNode, SimNetwork } from './sim-network.js';
import { VirtualClock } from './virtual-clock.js';

export interface SimulationOptions {
  /** Everything random in the run derives from it; errors name it so a run can be replayed. */
  readonly seed: number;
  /** Simulated time at the start (default 0). */
  readonly epoch?: number;
  readonly network?: Partial<NetworkFaults>;
  /** Collect every node's JSON log lines in `sim.logs` (default: silent). */
  readonly captureLogs?: boolean;
  /** Level of captured logs (default `debug`). */
  readonly logLevel?: string;
  /**
   * Microtask hops awaited after every dispatcher drain, so promise continuations (`ask`
   * replies, `fromPromise` actors) run before the next timer. Default 16; a longer chain just
   * continues after the next timer, still deterministically.
   */
  readonly microtaskHops?: number;
}

export interface AddSystemOptions extends Omit<ActorSystemConfig, 'clock' | 'scheduler' | 'random' | 'uid'> {
  /** Incarnation id; drawn from the seeded stream when absent, so a restart gets a new one. */
  readonly uid?: string;
  /** Overrides the simulation's `captureLogs` for this node (ignored when `logger` is given). */
  readonly captureLogs?: boolean;
}

export interface RunUntilOptions {
  /** Simulated ms after which `SimulationTimeoutError` is thrown (default 30 000). */
  readonly timeoutMs?: number;
  /**
   * The predicate is checked after every timer and at least every `stepMs` of simulated time
   * (for predicates on time itself; default 10).
   */
  readonly stepMs?: number;
  /** Names the condition in the timeout error. */
  readonly description?: string;
}

/** `false`, a message, or a throw is a violation; `true` or nothing is fine. */
export type InvariantCheck = () => boolean | string | undefined;

/**
 * A whole cluster in one process, driven by one seed: one virtual clock, one turn scheduler,
 * one seeded random source and one in-memory network shared by every node.
 *
 * Time only moves inside `runFor` / `runUntil`. They are async: after every timer they run all
 * dispatcher turns and await a few microtask hops (`await Promise.resolve()`), so promise
 * continuations such as `ask` replies run at a deterministic point between timers. Never run
 * two of them concurrently; always `await` them.
 */
export class Simulation {
  readonly seed: number;
  readonly clock: VirtualClock;
  readonly scheduler = new ManualScheduler();
  readonly random: SeededRandom;
  readonly network: SimNetwork;
  /** Captured JSON log lines of every node (when `captureLogs` is on). */
  readonly logs: string[] = [];
  private readonly uids: SeededRandom;
  private readonly systemList: ActorSystem[] = [];
  private readonly invariants = new Map<string, InvariantCheck>();
  /** Each system's own view of the clock and scheduler, through which it can be frozen or starved. */
  private readonly gates = new Map<
    ActorSystem,
    { readonly gate: NodeGate; releaseTimer?: number; releaseEnd?: number }
  >();
  private readonly hops: number;
  private readonly captureByDefault: boolean;
  private readonly logLevel: string;
  private capturedRoot: Logger | undefined;
  private running = false;

  constructor(options: SimulationOptions) {
    this.seed = options.seed;
    this.clock = new VirtualClock(options.epoch ?? 0);
    this.random = new SeededRandom(options.seed);
    this.uids = this.random.fork('uids');
    this.network = new SimNetwork(this.clock, this.random.fork('network'), options.network);
    this.hops = options.microtaskHops ?? 16;
    this.captureByDefault = options.captureLogs ?? false;
    this.logLevel = options.logLevel ?? 'debug';
  }

  get now(): number {
    return this.clock.now();
  }

  /** Every system added so far, crashed ones included. */
  get systems(): readonly ActorSystem[] {
    return this.systemList;
  }

  /**
   * Starts a node on simulated time and joins it to the network. Its dispatcher has no
   * wall-time budget per turn (`maxTurnMs: Infinity`) so batching never depends on the host.
   */
  addSystem(options: AddSystemOptions): ActorSystem {
    const { captureLogs, uid: givenUid, ...config } = options;
    const uid =
      givenUid ??
      this.uids.nextUint32().toString(16).padStart(8, '0') +
        this.uids.nextUint32().toString(16).padStart(8, '0');
    const stream = this.random.fork(`system:${options.host}:${options.port}#${uid}`);
    const gate = new NodeGate(this.clock, this.scheduler);
    const system = new ActorSystem({
      ...config,
      uid,
      clock: gate,
      scheduler: gate,
      random: () => stream.next(),
      logger:
        config.logger ?? ((captureLogs ?? this.captureByDefault) ? this.capturedLogger() : silentLogger()),
      dispatcher: { maxTurnMs: Number.POSITIVE_INFINITY, ...config.dispatcher },
    });
    system.attachTransport(this.network.transportFor(system));
    this.gates.set(system, { gate });
    this.systemList.push(system);
    return system;
  }

  /** Captured log lines parsed, optionally only those with a given `event`. */
  logEntries(event?: string): Record<string, unknown>[] {
    const entries = this.logs.map((line) => JSON.parse(line) as Record<string, unknown>);
    return event === undefined ? entries : entries.filter((e) => e.event === event);
  }

  // ---- running --------------------------------------------------------------------------------

  /** Runs everything due in the next `ms` of simulated time, then sets the clock to its end. */
  async runFor(ms: number): Promise<void> {
    await this.exclusive(() => this.drive(this.clock.now() + ms));
  }

  /** Runs until `predicate` holds; returns the simulated ms it took. */
  async runUntil(predicate: () => boolean, options: RunUntilOptions = {}): Promise<number> {
    const { timeoutMs = 30_000, stepMs = 10, description = 'runUntil predicate' } = options;
    const start = this.clock.now();
    const deadline = start + timeoutMs;
    const holds = () => {
      try {
        return predicate();
      } catch (error) {
        throw this.failure(`${description} threw`, error);
      }
    };
    return this.exclusive(async () => {
      if (await this.drive(this.clock.now(), holds)) return this.clock.now() - start;
      while (this.clock.now() < deadline) {
        const target = Math.min(this.clock.now() + Math.max(stepMs, 1e-3), deadline);
        if (await this.drive(target, holds)) return this.clock.now() - start;
      }
      throw new SimulationTimeoutError(this.seed, timeoutMs, description);
    });
  }

  /** Runs dispatcher turns and promise continuations that are ready now, without moving time. */
  async settle(): Promise<void> {
    await this.exclusive(() => this.drive(this.clock.now()));
  }

  // ---- invariants -----------------------------------------------------------------------------

  /** Throws `InvariantViolationError` (with seed and time) unless `check` passes now. */
  assertInvariant(name: string, check: InvariantCheck): void {
    let outcome: ReturnType<InvariantCheck>;
    try {
      outcome = check();
    } catch (error) {
      throw new InvariantViolationError(this.seed, name, this.clock.now(), (error as Error).message);
    }
    if (outcome === false || (typeof outcome === 'string' && outcome !== '')) {
      const detail = typeof outcome === 'string' ? outcome : undefined;
      throw new InvariantViolationError(this.seed, name, this.clock.now(), detail);
    }
  }

  /** Checks `check` after every step of `runFor` / `runUntil` until removed. */
  addInvariant(name: string, check: InvariantCheck): () => void {
    this.invariants.set(name, check);
    return () => this.invariants.delete(name);
  }

  // ---- faults ---------------------------------------------------------------------------------

  crash(node: NodeLike): ActorSystem {
    return this.network.crash(node);
  }

  pause(node: NodeLike, ms: number): void {
    this.network.pause(node, ms);
  }

  resume(node: NodeLike): void {
    this.network.resume(node);
  }

  /**
   * Stops a node as SIGSTOP does, for `ms` (Infinity: until `thaw`): unlike `pause`, which only
   * holds its traffic, its timers and dispatcher turns wait too. On thawing, what it had queued
   * runs first and what arrived for it is delivered, then its overdue timers fire (I/O before
   * timers, as an event loop woken from its poll).
   */
  freeze(node: NodeLike, ms: number): void {
    const system = this.systemOf(node);
    this.network.pause(system, Number.POSITIVE_INFINITY);
    this.holdUntil(system, { timers: true, turns: true }, ms);
  }

  /** Ends a `freeze` (or `holdTimers`) now. */
  thaw(node: NodeLike): void {
    const system = this.systemOf(node);
    const entry = this.gates.get(system)!;
    if (entry.releaseTimer !== undefined) this.clock.clearTimeout(entry.releaseTimer);
    entry.releaseTimer = undefined;
    entry.releaseEnd = undefined;
    entry.gate.release();
    // a node restarted at the same address since is another incarnation: not ours to resume
    if (this.network.systemAt(system) === system) this.network.resume(system);
  }

  /**
   * Starves a node's event loop of `ms`: its timers coming due in that time fire at its end, in
   * order (clock-driven work up to `ms` late), while its messages are still delivered and handled.
   */
  holdTimers(node: NodeLike, ms: number): void {
    this.holdUntil(this.systemOf(node), { timers: true, turns: false }, ms);
  }

  /** Whether `freeze` or `holdTimers` holds the node now. */
  isHeld(node: NodeLike): boolean {
    const gate = this.gates.get(this.systemOf(node))?.gate;
    return gate !== undefined && (gate.holdsTimers || gate.holdsTurns);
  }

  partition(groupA: readonly NodeLike[], groupB: readonly NodeLike[]): void {
    this.network.partition(groupA, groupB);
  }

  blockOneWay(from: NodeLike, to: NodeLike): void {
    this.network.blockOneWay(from, to);
  }

  healLink(a: NodeLike, b: NodeLike): void {
    this.network.healLink(a, b);
  }

  heal(): void {
    this.network.heal();
  }

  /** Terminates every node (for `afterEach`). */
  shutdown(): void {
    for (const system of this.systemList) system.terminate();
  }

  // ---- internals ------------------------------------------------------------------------------

  private systemOf(node: NodeLike): ActorSystem {
    const system = node instanceof ActorSystem ? node : this.network.systemAt(node);
    if (!system || !this.gates.has(system)) {
      throw new SimulationError(`no simulated node ${nameOfNode(node)}`, 'sim-no-node', this.seed);
    }
    return system;
  }

  /** Holds a node's gate until `ms` from now (a later end extends a hold, never shortens it). */
  private holdUntil(system: ActorSystem, what: { timers: boolean; turns: boolean }, ms: number): void {
    if (!(ms >= 0)) throw new SimulationError(`a hold needs ms >= 0, got ${ms}`, 'sim-bad-hold', this.seed);
    const entry = this.gates.get(system)!;
    const end = this.clock.now() + ms;
    const held = entry.gate.holdsTimers || entry.gate.holdsTurns;
    entry.gate.hold(what);
    if (held && (entry.releaseEnd ?? 0) >= end) return;
    if (entry.releaseTimer !== undefined) this.clock.clearTimeout(entry.releaseTimer);
    entry.releaseTimer = undefined;
    entry.releaseEnd = end;
    if (!Number.isFinite(end)) return;
    entry.releaseTimer = this.clock.setTimeoutAt(end, () => {
      entry.releaseTimer = undefined;
      this.thaw(system);
    });
  }

  /** Runs timers due up to `target`; stops early (returning true) once `stop` holds. */
  private async drive(target: number, stop?: () => boolean): Promise<boolean> {
    try {
      await this.quiesce();
      if (stop?.()) return true;
      while (this.clock.runNext(target)) {
        await this.quiesce();
        if (stop?.()) return true;
      }
      this.clock.advanceTo(target);
      return stop?.() ?? false;
    } catch (error) {
      if (error instanceof SimulationError) throw error;
      throw this.failure(`run failed at t=${this.clock.now()} ms`, error);
    }
  }

  /** Drains dispatcher turns and microtasks until neither has more to do, then checks invariants. */
  private async quiesce(): Promise<void> {
    do {
      this.scheduler.runAll();
      for (let i = 0; i < this.hops; i++) await Promise.resolve();
    } while (this.scheduler.pending > 0);
    for (const [name, check] of this.invariants) this.assertInvariant(name, check);
  }

  private async exclusive<T>(run: () => Promise<T>): Promise<T> {
    if (this.running) {
      throw new SimulationError(
        'runFor/runUntil/settle called while another is running; await it',
        'sim-reentrant',
        this.seed,
      );
    }
    this.running = true;
    try {
      return await run();
    } finally {
      this.running = false;
    }
  }

  private failure(what: string, cause: unknown): SimulationError {
    const error = new SimulationError(
      `${what}: ${cause instanceof Error ? cause.message : String(cause)}`,
      'sim-run-failed',
      this.seed,
    );
    error.cause = cause;
    return error;
  }

  private capturedLogger(): Logger {
    this.capturedRoot ??= captureLogger(this.logs, () => this.clock.now(), this.logLevel);
    return this.capturedRoot;
  }
}
