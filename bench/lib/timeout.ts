/** Settles like `promise`, but rejects if it has not settled within `ms`, so a stuck bench fails instead of hanging. */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}

/**
 * Resolves with `performance.now()` once `check()` holds, polling every `everyMs`; rejects after `timeoutMs`,
 * naming `what` and, when given, what `views()` says was seen instead.
 */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
  everyMs = 5,
  views?: () => string | Promise<string>,
): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (await check()) return performance.now();
    if (performance.now() >= deadline) {
      const seen = views ? ` (${await views()})` : '';
      throw new Error(`${what}: not done after ${timeoutMs} ms${seen}`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
