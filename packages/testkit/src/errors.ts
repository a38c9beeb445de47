import { DoyenError } from '@doyen/core';

/**
 * Base of the testkit's errors. Every one names the seed (`seed=<n>`) so a failing run can be
 * replayed exactly: `DOYEN_SEED=<n>` with `forEachSeed`, or `new Simulation({ seed: <n> })`.
 */
export class SimulationError extends DoyenError {
  constructor(
    message: string,
    code: string,
    readonly seed: number,
  ) {
    super(`${message} (seed=${seed})`, code);
  }
}

export class SimulationTimeoutError extends SimulationError {
  constructor(
    seed: number,
    readonly timeoutMs: number,
    readonly description: string,
  ) {
    super(`${description} did not hold within ${timeoutMs} ms of simulated time`, 'sim-timeout', seed);
  }
}

export class InvariantViolationError extends SimulationError {
  constructor(
    seed: number,
    readonly invariant: string,
    readonly time: number,
    detail: string | undefined,
  ) {
    super(
      `invariant ${JSON.stringify(invariant)} violated at t=${time} ms${detail ? `: ${detail}` : ''}`,
      'sim-invariant',
      seed,
    );
  }
}

/** A run for one seed of `forEachSeed` failed; `cause` is the original error. */
export class SeedFailureError extends SimulationError {
  constructor(seed: number, cause: unknown) {
    const text = cause instanceof Error ? cause.message : String(cause);
    // a SimulationError already names the seed: say it once
    super(`run failed: ${text.replace(` (seed=${seed})`, '')}`, 'sim-seed-failed', seed);
    this.cause = cause;
    if (cause instanceof Error && cause.stack) this.stack = `${this.stack}\nCaused by: ${cause.stack}`;
  }
}

/** Misuse of the simulated network: unknown node, address already taken, bad fault settings. */
export class SimNetworkError extends DoyenError {
  constructor(message: string) {
    super(message, 'sim-network');
  }
}
