// Small, dependency-free statistics for benchmark figures.

/** Value at percentile `p` (0–100), linearly interpolated between the closest ranks. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) throw new Error('percentile of an empty list');
  if (p < 0 || p > 100) throw new RangeError(`percentile ${p} is outside 0..100`);
  const sorted = [...xs].sort((a, b) => a - b);
  const rank = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  const low = sorted[lo]!;
  return low + (sorted[hi]! - low) * (rank - lo);
}

export function median(xs: readonly number[]): number {
  return percentile(xs, 50);
}

/** Runs an async measurement `n` times, one after another so runs never compete, and returns every figure. */
export async function runs<T>(n: number, fn: (run: number) => Promise<T>): Promise<T[]> {
  const figures: T[] = [];
  for (let i = 0; i < n; i++) figures.push(await fn(i));
  return figures;
}

/** Items per second for `count` items handled between two `process.hrtime.bigint()` readings. */
export function perSecond(count: number, startNs: bigint, endNs: bigint): number {
  return count / (Number(endNs - startNs) / 1e9);
}

/** Prints one JSON object as the last line of stdout, so scripts can take `tail -n 1`. */
export function printResult(obj: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(obj)}\n`);
}

/** The most of `times` (ms) inside any window of `windowMs`: a rate's busiest stretch. */
export function busiestWindow(times: readonly number[], windowMs: number): number {
  const sorted = [...times].sort((x, y) => x - y);
  let most = 0;
  let from = 0;
  for (let to = 0; to < sorted.length; to++) {
    while (sorted[to]! - sorted[from]! >= windowMs) from++;
    most = Math.max(most, to - from + 1);
  }
  return most;
}
