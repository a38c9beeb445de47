import { DoyenError, type Logger } from '@doyen/core';

/**
 * The phases of a graceful stop, in order (Akka's CoordinatedShutdown, condensed):
 * - `before-leave`: the app stops taking new work (unbind its own servers, pause consumers);
 *   the node RETIRES: still up, it gets a partition table without it and hands its partitions
 *   off (their entities' state and held messages travel to the new owners);
 * - `leave`: the node leaves the cluster and waits until it is removed — the singletons it ran
 *   are handed over on the way (the new oldest asks for them, proxies drain, then it starts);
 * - `hand-over`: confirms no singleton instance still runs here;
 * - `drain`: waits until the mailboxes of the app's actors (`/user`) are empty;
 * - `stop-actors`: stops the app's actors (children with their parents);
 * - `close`: closes the management server and the transport.
 */
export const SHUTDOWN_PHASES = [
  'before-leave',
  'leave',
  'hand-over',
  'drain',
  'stop-actors',
  'close',
] as const;
export type ShutdownPhase = (typeof SHUTDOWN_PHASES)[number];

/** How long each phase may take before the shutdown moves on (ms). */
export const DEFAULT_PHASE_TIMEOUTS_MS: Readonly<Record<ShutdownPhase, number>> = {
  'before-leave': 5_000,
  leave: 15_000,
  'hand-over': 5_000,
  drain: 5_000,
  'stop-actors': 5_000,
  close: 5_000,
};

/**
 * The leave phase's timeout for a cluster leave timeout: the leave itself, plus a second for the
 * removal to be seen before the phase gives up.
 */
export function leavePhaseTimeoutMs(leaveTimeoutMs: number): number {
  return leaveTimeoutMs + 1000;
}

/**
 * The longest a coordinated shutdown can take: every phase runs to its timeout, one after the
 * other. A pod's `terminationGracePeriodSeconds` must be longer, or the kubelet kills the node
 * mid-leave (test/deploy/manifests.test.ts checks the manifests against it).
 */
export function worstCaseShutdownMs(
  timeoutsMs: Readonly<Partial<Record<ShutdownPhase, number>>> = {},
): number {
  return SHUTDOWN_PHASES.reduce(
    (sum, phase) => sum + (timeoutsMs[phase] ?? DEFAULT_PHASE_TIMEOUTS_MS[phase]),
    0,
  );
}

export type ShutdownTask = (reason: string) => void | Promise<void>;

export class UnknownShutdownPhaseError extends DoyenError {
  constructor(phase: string) {
    super(`unknown shutdown phase ${JSON.stringify(phase)}: one of ${SHUTDOWN_PHASES.join(', ')}`, 'config');
  }
}

/** What a run of the shutdown did, phase by phase. */
export interface ShutdownReport {
  readonly reason: string;
  readonly phases: readonly {
    readonly phase: ShutdownPhase;
    readonly ms: number;
    readonly timedOut: boolean;
    readonly failed: readonly string[];
  }[];
}

/**
 * Runs the tasks of each phase (concurrently within a phase, phases in order), each phase bounded
 * by its timeout. A task that throws or outlives its phase is logged and the shutdown goes on:
 * a stuck hook never keeps a node from stopping. Runs once; later calls get the same result.
 */
export class CoordinatedShutdown {
  private readonly tasks = new Map<ShutdownPhase, Map<string, ShutdownTask>>();
  private running: Promise<ShutdownReport> | undefined;

  constructor(
    private readonly logger: Logger,
    private readonly timeoutsMs: Readonly<Partial<Record<ShutdownPhase, number>>> = {},
  ) {}

  /**
   * Adds (or, under the same phase and name, replaces) a task; returns its removal. Replacing by
   * name lets a `setup` hook that runs in every incarnation register its tasks again safely.
   */
  addTask(phase: ShutdownPhase, name: string, task: ShutdownTask): () => void {
    if (!SHUTDOWN_PHASES.includes(phase)) throw new UnknownShutdownPhaseError(phase);
    let tasks = this.tasks.get(phase);
    if (!tasks) this.tasks.set(phase, (tasks = new Map()));
    tasks.set(name, task);
    return () => {
      if (tasks.get(name) === task) tasks.delete(name);
    };
  }

  /** Whether the shutdown has started. */
  get started(): boolean {
    return this.running !== undefined;
  }

  timeoutOf(phase: ShutdownPhase): number {
    return this.timeoutsMs[phase] ?? DEFAULT_PHASE_TIMEOUTS_MS[phase];
  }

  run(reason: string): Promise<ShutdownReport> {
    this.running ??= this.runPhases(reason);
    return this.running;
  }

  private async runPhases(reason: string): Promise<ShutdownReport> {
    const phases: ShutdownReport['phases'][number][] = [];
    this.logger.info({ event: 'shutdown.started', reason }, `coordinated shutdown (${reason})`);
    for (const phase of SHUTDOWN_PHASES) {
      const started = Date.now();
      const timeoutMs = this.timeoutOf(phase);
      const failed: string[] = [];
      const pending = new Set<string>();
      const runs = [...(this.tasks.get(phase) ?? new Map<string, ShutdownTask>())].map(
        async ([name, task]) => {
          pending.add(name);
          try {
            await task(reason);
          } catch (error) {
            failed.push(name);
            this.logger.error(
              { event: 'shutdown.task-failed', phase, task: name, err: error },
              `shutdown task ${name} (${phase}) failed; going on`,
            );
          } finally {
            pending.delete(name);
          }
        },
      );
      let timer: NodeJS.Timeout | undefined;
      const timedOut = await Promise.race([
        Promise.all(runs).then(() => false),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(true), timeoutMs);
        }),
      ]);
      clearTimeout(timer);
      if (timedOut)
        this.logger.warn(
          { event: 'shutdown.phase-timeout', phase, timeoutMs, pending: [...pending] },
          `shutdown phase ${phase} timed out after ${timeoutMs} ms (still running: ${[...pending].join(', ')}); going on`,
        );
      const ms = Date.now() - started;
      this.logger.info(
        { event: 'shutdown.phase', phase, ms, timedOut },
        `shutdown phase ${phase} done in ${ms} ms`,
      );
      phases.push({ phase, ms, timedOut, failed });
    }
    return { reason, phases };
  }
}
