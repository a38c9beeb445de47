import type { Logger } from '@doyen/core';
import { pino } from 'pino';

/**
 * How long an exiting process waits for the reader of its stdout to take the log output still
 * buffered: ample for a reader that is behind under CPU load, short against a supervisor's grace
 * period (10–30 s), so a stuck reader cannot hold the exit.
 */
export const LOG_DRAIN_TIMEOUT_MS = 5_000;

/** How the buffered log output ended: all of it written, given up on, or nothing to wait for. */
export type LogDrainOutcome = 'written' | 'reader-gone' | 'timed-out' | 'not-buffered';

/** What pino's default destination (a sonic-boom on fd 1, writing asynchronously) offers for an orderly end. */
interface BufferedDestination {
  readonly destroyed: boolean;
  flushSync(): void;
  end(): void;
  destroy(): void;
  once(event: 'close' | 'error', listener: () => void): unknown;
  removeListener(event: 'close' | 'error', listener: () => void): unknown;
}

function bufferedDestination(logger: Logger): BufferedDestination | undefined {
  const stream = (logger as unknown as Record<symbol, unknown>)[pino.symbols.streamSym] as
    | Partial<BufferedDestination>
    | undefined;
  const usable =
    typeof stream?.flushSync === 'function' &&
    typeof stream.end === 'function' &&
    typeof stream.destroy === 'function' &&
    typeof stream.once === 'function';
  return usable && !stream.destroyed ? (stream as BufferedDestination) : undefined;
}

/**
 * Ends `logger`'s destination once everything logged so far is written, or after `timeoutMs`
 * (then drops the rest). Called right before `process.exit`: pino's own exit hook writes the
 * buffer with `flushSync`, which skips the chunk (up to 16 KB) whose asynchronous write is in
 * flight, and on a full pipe (a non-blocking fd 1, EAGAIN, retried 100 ms later) that write is
 * still in flight at the exit, so the chunk was lost while the lines after it arrived (issue 29:
 * 52 `sharding.passivated` lines of a node leaving under load, read as overlapping activations).
 * Nothing may be logged through `logger` after this resolves.
 */
export function drainLogOutput(logger: Logger, timeoutMs = LOG_DRAIN_TIMEOUT_MS): Promise<LogDrainOutcome> {
  const destination = bufferedDestination(logger);
  if (!destination) return Promise.resolve('not-buffered');
  return new Promise((resolve) => {
    const done = (outcome: LogDrainOutcome) => {
      clearTimeout(timer);
      destination.removeListener('close', onClose);
      destination.removeListener('error', onError);
      resolve(outcome);
    };
    const onClose = () => done('written');
    // EPIPE: the reader closed its end; pino has already made the destination a no-op
    const onError = () => done('reader-gone');
    const timer = setTimeout(() => {
      // destroyed, pino's exit hook leaves it alone: no flushSync retrying a full pipe forever
      destination.destroy();
      done('timed-out');
    }, timeoutMs);
    destination.once('close', onClose);
    destination.once('error', onError);
    destination.end();
  });
}

/**
 * `process.exit(code)` once `logger`'s output is written (bounded by `timeoutMs`); a drain given up
 * on is said on stderr, the only place left to say it.
 */
export async function exitAfterLogs(
  logger: Logger,
  code: number,
  timeoutMs = LOG_DRAIN_TIMEOUT_MS,
): Promise<never> {
  const outcome = await drainLogOutput(logger, timeoutMs);
  if (outcome === 'timed-out')
    process.stderr.write(`doyen: the log output was not taken within ${timeoutMs} ms; the rest is dropped\n`);
  process.exit(code);
}
