import { expect } from 'vitest';

/**
 * The error `run` throws, asserted to be a `type` (the positive control that it does throw: a run
 * that returns fails here rather than letting the caller check nothing).
 */
export function thrownBy<E extends Error>(run: () => unknown, type: abstract new (...args: never[]) => E): E {
  let error: unknown;
  try {
    run();
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(type);
  return error as E;
}
