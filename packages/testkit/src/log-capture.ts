import { type Logger, pino } from 'pino';

/**
 * A pino logger whose JSON lines go to an in-memory array, stamped with simulated time so a
 * captured log is identical on every replay of a seed.
 */
export function captureLogger(lines: string[], now: () => number, level = 'debug'): Logger {
  return pino(
    { level, base: undefined, timestamp: () => `,"time":${now()}` },
    { write: (line: string) => void lines.push(line.endsWith('\n') ? line.slice(0, -1) : line) },
  );
}
