/**
 * Thrown when a failure-detector configuration cannot work (e.g. a zero standard deviation would
 * make phi divide by zero). Raised at construction, so a bad config fails at start-up, not when
 * the first peer goes quiet.
 */
export class FailureDetectorConfigError extends Error {
  override readonly name = 'FailureDetectorConfigError';

  constructor(
    readonly field: string,
    readonly value: unknown,
    readonly requirement: string,
  ) {
    super(`invalid failure detector config: ${field} must be ${requirement}, got ${String(value)}`);
  }
}

/** Checks `value` is a finite number > 0. */
export function requirePositive(field: string, value: number): void {
  if (!Number.isFinite(value) || value <= 0) {
    throw new FailureDetectorConfigError(field, value, 'a finite number > 0');
  }
}

/** Checks `value` is a finite number >= 0. */
export function requireNonNegative(field: string, value: number): void {
  if (!Number.isFinite(value) || value < 0) {
    throw new FailureDetectorConfigError(field, value, 'a finite number >= 0');
  }
}

/** Checks `value` is an integer >= 1. */
export function requirePositiveInteger(field: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new FailureDetectorConfigError(field, value, 'an integer >= 1');
  }
}
