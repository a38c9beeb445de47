import { InvalidConfigError } from './errors.js';

/** What happens when an actor's logic throws. */
export type SupervisionStrategy =
  | {
      readonly kind: 'restart';
      /** First restart delay; doubles per consecutive failure up to `maxBackoffMs`. */
      readonly minBackoffMs: number;
      readonly maxBackoffMs: number;
      /** Extra random delay as a fraction of the backoff, so restarts of many actors do not align. */
      readonly randomFactor: number;
      /** Give up (stop) after this many restarts within `withinMs`. */
      readonly maxRestarts: number;
      readonly withinMs: number;
    }
  | { readonly kind: 'stop' };

export const defaultSupervision: SupervisionStrategy = {
  kind: 'restart',
  minBackoffMs: 100,
  maxBackoffMs: 10_000,
  randomFactor: 0.2,
  maxRestarts: 10,
  withinMs: 60_000,
};

export function validateSupervision(s: SupervisionStrategy): SupervisionStrategy {
  if (s.kind === 'restart') {
    if (!(s.minBackoffMs >= 0 && s.maxBackoffMs >= s.minBackoffMs)) {
      throw new InvalidConfigError('supervision: need 0 <= minBackoffMs <= maxBackoffMs');
    }
    if (!(s.randomFactor >= 0) || !(s.maxRestarts >= 0) || !(s.withinMs > 0)) {
      throw new InvalidConfigError('supervision: randomFactor, maxRestarts >= 0 and withinMs > 0 required');
    }
  }
  return s;
}

/** Decision after a failure, given earlier failure times (pure: time and randomness are inputs). */
export function decideRestart(
  strategy: SupervisionStrategy,
  recentFailures: readonly number[],
  now: number,
  random: number,
): { readonly action: 'stop' } | { readonly action: 'restart'; readonly delayMs: number } {
  if (strategy.kind === 'stop') return { action: 'stop' };
  const inWindow = recentFailures.filter((t) => now - t < strategy.withinMs).length;
  if (inWindow > strategy.maxRestarts) return { action: 'stop' };
  const exponent = Math.max(0, inWindow - 1);
  const base = Math.min(strategy.maxBackoffMs, strategy.minBackoffMs * 2 ** exponent);
  return { action: 'restart', delayMs: Math.round(base * (1 + random * strategy.randomFactor)) };
}
