// A pino destination for a bench node's logger: every line handed on parsed, with the time its chunk was
// written, so a bench reads what a node logged (and when) without parsing text itself.
import { Writable } from 'node:stream';

/** A parsed log line: pino's fields, `level` and `event` among them when present. */
export type LogEntry = Record<string, unknown> & { readonly level?: number; readonly event?: string };

/**
 * A stream to give `createLogger({ destination })`: each non-empty line goes to `parsed` (or, when it is not
 * JSON, to `unparsed`) with `now()` read once per written chunk.
 */
export function logLineSink(
  now: () => number,
  parsed: (entry: LogEntry, t: number, line: string) => void,
  unparsed: (line: string, t: number) => void,
): Writable {
  return new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      const t = now();
      for (const line of chunk.toString().split('\n')) {
        if (line.length === 0) continue;
        let entry: LogEntry;
        try {
          entry = JSON.parse(line) as LogEntry;
        } catch {
          unparsed(line, t);
          continue;
        }
        parsed(entry, t, line);
      }
      done();
    },
  });
}
