import { ActorSystem, type ActorSystemConfig, type Logger, silentLogger } from '@doyen/core';
import { InvariantViolationError, SimulationError, SimulationTimeoutError } from './errors.js';
import { captureLogger } from './log-capture.js';
import { ManualScheduler } from './manual-scheduler.js';
import { SeededRandom } from './seeded-random.js';
import { type NetworkFaults, type NodeLike, SimNetwork } from './sim-network.js';
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
    const system = new ActorSystem({
      ...config,
      uid,
      clock: this.clock,
      scheduler: this.scheduler,
      random: () => stream.next(),
      logger:
        config.logger ?? ((captureLogs ?? this.captureByDefault) ? this.capturedLogger() : silentLogger()),
      dispatcher: { maxTurnMs: Number.POSITIVE_INFINITY, ...config.dispatcher },
    });
    system.attachTransport(this.network.transportFor(system));
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
