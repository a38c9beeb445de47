/**
 * THE CHAOS RUNNER'S POSITIVE CONTROL, NEVER FOR PRODUCTION: with
 * `DOYEN_SHARDING_UNSAFE_SKIP_FENCE=1` in a node's environment, its partition keeper takes every
 * member it sees as unreachable, downed or removed as FENCED at once, without asking the voters or
 * waiting out that member's owner lease and pause bound. A recovery then recreates a partition's
 * token while the old owner may still run its entities: the overlap the fence exists to prevent.
 * Only `pnpm chaos sharding --unsafe-skip-fence` and test/netns/sharding-chaos.test.ts set it, to
 * show that the checker catches an overlap (so a clean run cannot pass vacuously).
 */
export const UNSAFE_SKIP_FENCE_ENV = 'DOYEN_SHARDING_UNSAFE_SKIP_FENCE';

/** Whether this process runs the keeper without the fence (the variable is exactly `1`). */
export function unsafeSkipFence(env: NodeJS.ProcessEnv = process.env): boolean {
  return env[UNSAFE_SKIP_FENCE_ENV] === '1';
}
