import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { WireEvent } from '../../packages/doyen/src/console/console-messages.js';
import { LogTap } from '../../packages/doyen/src/console/log-tap.js';
import { createNodeLogger, LOG_SEQ_FIELD } from '../../packages/doyen/src/node-logger.js';

/**
 * The console's timeline reads the node's own log lines: an event's fields are what its call site
 * logged, not what every line carries. The node logger numbers every line (`logSeq`, so a reader
 * can tell a lost line): that number is the line's, not the event's, and stays out of `fields`.
 * Positive control: the written line does carry it, so its absence from `fields` is the tap's doing.
 */
describe('the console log tap', () => {
  it('keeps the event’s own fields and leaves out the line number every line carries', () => {
    const written: string[] = [];
    const logger = createNodeLogger({
      node: '127.0.0.1:1',
      destination: new Writable({
        write: (chunk, _e, done) => {
          written.push(String(chunk));
          done();
        },
      }),
    });
    const events: WireEvent[] = [];
    const tap = new LogTap(logger, '127.0.0.1:1', (e) => events.push(e));
    expect(tap.attached).toBe(true);
    logger.info({ event: 'member.up', member: 'b' }, 'up');
    tap.close();
    expect(events).toHaveLength(1);
    expect(events[0]!.event).toBe('member.up');
    expect(events[0]!.fields).toEqual({ member: 'b' });
    // positive control: the line itself is numbered
    expect(JSON.parse(written.at(-1)!)[LOG_SEQ_FIELD]).toEqual(expect.any(Number));
  });
});
