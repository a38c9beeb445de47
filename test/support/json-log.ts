// A logger whose lines a test reads back as parsed objects, as pino wrote them (createLogger's own format).
import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../packages/core/src/index.js';

/** A pino line, parsed. */
export type LogLine = Record<string, unknown> & { level: number; event?: string; msg?: string };

/** A logger at `level` and the lines it has written so far, each parsed. */
export function jsonLogCapture(level = 'debug'): { lines: LogLine[]; logger: Logger } {
  const lines: LogLine[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  return { lines, logger: createLogger({ level, destination }) };
}
