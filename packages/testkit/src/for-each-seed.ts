import { SeedFailureError } from './errors.js';

/**
 * Runs `fn` once per seed, one after the other, and rethrows the first failure as a
 * `SeedFailureError` naming the seed. Set `DOYEN_SEED=<n>` to replay just that seed.
 */
export async function forEachSeed(
  seeds: Iterable<number>,
  fn: (seed: number) => void | Promise<void>,
): Promise<void> {
  const only = process.env.DOYEN_SEED;
  const list = only !== undefined && only !== '' ? [Number(only)] : [...seeds];
  for (const seed of list) {
    try {
      await fn(seed);
    } catch (error) {
      throw new SeedFailureError(seed, error);
    }
  }
}
