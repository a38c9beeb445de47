import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { LOG_SEQ_FIELD, NodeProcess } from '../../packages/testkit/src/index.js';

/** NodeProcess counts the log lines that never reached it from the numbers doyen's node logger gives them. */

const NODE_LOGGER = fileURLToPath(new URL('../../packages/doyen/src/node-logger.ts', import.meta.url));

describe('NodeProcess.linesLost', () => {
  it('the node logger numbers every line it writes (not those below its level): nothing lost', async () => {
    const p = NodeProcess.spawn({
      args: [
        '--conditions=@doyen/source',
        '--import',
        import.meta.resolve('tsx'),
        '-e',
        `import(${JSON.stringify(NODE_LOGGER)}).then(({ createNodeLogger, withNodeField }) => {
           const logger = createNodeLogger({ level: 'info' });
           logger.info({ event: 'a.one' }, 'one');
           logger.debug({ event: 'a.hidden' }, 'below the level');
           withNodeField(logger, '127.0.0.1:1').child({ part: 'x' }).warn({ event: 'a.two' }, 'two');
           logger.info({ event: 'a.three' }, 'three');
         });`,
      ],
    });
    await p.exited;
    const numbers = p.events().map((e) => e[LOG_SEQ_FIELD]);
    expect(p.events().map((e) => e.event)).toEqual(['a.one', 'a.two', 'a.three']);
    expect(numbers).toEqual([1, 2, 3]);
    expect(p.linesLost).toBe(0);
  }, 30_000);

  it('positive control: numbers skipped are counted, lines without a number and stderr are not', async () => {
    const lines = [1, 2, 5, 6, 9].map((n) => JSON.stringify({ event: 'x', [LOG_SEQ_FIELD]: n }));
    const p = NodeProcess.spawn({
      args: [
        '-e',
        `for (const l of ${JSON.stringify(lines)}) console.log(l);
         console.log('{"event":"unnumbered"}');
         console.error('{"event":"on stderr","${LOG_SEQ_FIELD}":40}');`,
      ],
    });
    await p.exited;
    expect(p.events()).toHaveLength(7);
    expect(p.linesLost).toBe(4); // 3, 4, 7, 8
  });
});
