import { type Logger, pino } from 'pino';

export type { Logger } from 'pino';

/** A JSON-lines logger; every cluster fact carries an `event` field (see DESIGN.md). */
export function createLogger(options: { level?: string; destination?: NodeJS.WritableStream } = {}): Logger {
  const level = options.level ?? process.env.DOYEN_LOG_LEVEL ?? 'info';
  return options.destination ? pino({ level }, options.destination as never) : pino({ level });
}

/** A logger that discards everything: the default for library use and tests. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

/**
 * Lets through at most `perSecond` lines per key and counts the rest, so a peer flooding us
 * with bad input cannot flood the log too. `now` is injected for simulated time.
 */
export class RateLimitedLog {
  private readonly windows = new Map<string, { start: number; used: number; suppressed: number }>();

  constructor(
    private readonly logger: Logger,
    private readonly now: () => number,
    private readonly perSecond = 20,
  ) {}

  warn(key: string, fields: Record<string, unknown>, message: string): void {
    this.at('warn', key, fields, message);
  }

  /** As `warn`, at another level (a key's lines, and its "suppressed" line, all at that level). */
  at(level: 'warn' | 'info' | 'debug', key: string, fields: Record<string, unknown>, message: string): void {
    const t = this.now();
    let w = this.windows.get(key);
    if (!w || t - w.start >= 1000) {
      if (w && w.suppressed > 0) {
        this.logger[level](
          { ...fields, suppressed: w.suppressed },
          `${w.suppressed} similar lines suppressed`,
        );
      }
      w = { start: t, used: 0, suppressed: 0 };
      this.windows.set(key, w);
    }
    if (w.used < this.perSecond) {
      w.used++;
      this.logger[level](fields, message);
    } else {
      w.suppressed++;
    }
  }

  /** Forgets a key's window (e.g. the actor it was about stopped), so the map does not grow forever. */
  forget(key: string): void {
    this.windows.delete(key);
  }
}
