import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { freePorts, NodeProcess } from '../../packages/testkit/src/index.js';

/**
 * Issue 29: a node exiting while the reader of its stdout is behind (a full pipe) lost one chunk
 * of its log (~16 KB, contiguous) while the lines after it arrived; the bench read the missing
 * `sharding.passivated` lines as overlapping activations.
 */

const CHILD = fileURLToPath(new URL('../support/log-flood-child.ts', import.meta.url));
const LINES = 10_000; // ~4 MB: far more than a pipe holds

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

const started: NodeProcess[] = [];
afterEach(() => {
  for (const p of started.splice(0)) p.kill9();
});

/** The child, its stdout unread (paused) until it says its pipe is full. */
async function floodWithPausedReader(exit: 'drained' | 'hook-only', drainMs = 5000) {
  const child = NodeProcess.spawn({
    args: ['--conditions=@doyen/source', '--import', import.meta.resolve('tsx'), CHILD],
    env: { FLOOD_LINES: String(LINES), FLOOD_EXIT: exit, FLOOD_DRAIN_MS: String(drainMs) },
  });
  started.push(child);
  child.process.stdout!.pause();
  const full = await child.waitForLine((l) => l.stream === 'stderr' && l.text.includes('pipe full'), 60_000);
  expect(full, 'the child filled its pipe and got to its exit').toBeDefined();
  return child;
}

/** As above, then reads on: the `i` of every line that arrived. */
async function floodWithSlowReader(exit: 'drained' | 'hook-only') {
  const child = await floodWithPausedReader(exit);
  child.process.stdout!.resume();
  const status = await child.exited;
  const seen = child
    .events()
    .filter((e) => e.event === 'flood.line')
    .map((e) => e.i as number);
  const last = child.events().some((e) => e.event === 'flood.last');
  return { status, seen, last, linesLost: child.linesLost };
}

const missing = (seen: readonly number[]) => {
  const got = new Set(seen);
  return Array.from({ length: LINES }, (_, i) => i).filter((i) => !got.has(i));
};

describe('a node’s log output at exit, read by a slow reader', () => {
  it('exitAfterLogs: every line arrives, in order, before the exit', async () => {
    const { status, seen, last, linesLost } = await floodWithSlowReader('drained');
    expect(status).toEqual({ code: 0, signal: null });
    expect(missing(seen)).toEqual([]);
    expect(linesLost).toBe(0);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
    expect(last).toBe(true);
  }, 90_000);

  it('positive control: pino’s exit hook alone loses one contiguous chunk, the lines after it arrive', async () => {
    const { status, seen, last, linesLost } = await floodWithSlowReader('hook-only');
    expect(status).toEqual({ code: 0, signal: null });
    const lost = missing(seen);
    expect(lost.length).toBeGreaterThan(0);
    // the reader sees the loss in the lines' numbers (logSeq), without knowing what was logged
    expect(linesLost).toBe(lost.length);
    // one block (the chunk in flight: up to 16 KB), not a tail: later lines and the last one arrived
    expect(lost.at(-1)! - lost[0]! + 1).toBe(lost.length);
    expect(Math.max(...seen)).toBe(LINES - 1);
    expect(last).toBe(true);
  }, 90_000);

  it('a reader that never reads holds the exit for the drain bound only; the rest is dropped, said on stderr', async () => {
    const child = await floodWithPausedReader('drained', 500);
    const exited = await Promise.race([child.exited, sleep(10_000).then(() => undefined)]);
    expect(exited).toEqual({ code: 0, signal: null });
    expect(child.logs.some((l) => l.includes('was not taken within 500 ms'))).toBe(true);
  }, 90_000);

  it('positive control: pino’s exit hook alone retries the full pipe for as long as nobody reads', async () => {
    const child = await floodWithPausedReader('hook-only');
    const exited = await Promise.race([child.exited, sleep(3_000).then(() => undefined)]);
    expect(exited).toBeUndefined();
    expect(child.running).toBe(true);
  }, 90_000);

  it('a reader that closed its end (EPIPE) does not hold the exit for the drain bound', async () => {
    const child = await floodWithPausedReader('drained', 60_000);
    child.process.stdout!.destroy();
    const exited = await Promise.race([child.exited, sleep(20_000).then(() => undefined)]);
    expect(exited).toEqual({ code: 0, signal: null });
  }, 90_000);

  it('an app’s startNode({ handleSignals: true }): SIGTERM leaves, every line is read, then exit 0', async () => {
    const [port] = await freePorts(1);
    const START_NODE = fileURLToPath(new URL('../../packages/doyen/src/start-node.ts', import.meta.url));
    const config = { cluster: 'drain', host: '127.0.0.1', port, seeds: [{ host: '127.0.0.1', port }] };
    const app = NodeProcess.spawn({
      args: [
        '--conditions=@doyen/source',
        '--import',
        import.meta.resolve('tsx'),
        '-e',
        `import(${JSON.stringify(START_NODE)}).then(({ startNode }) =>
           startNode({ ...${JSON.stringify(config)}, secret: 's', partitions: { count: 0 } }, { handleSignals: true }));`,
      ],
    });
    started.push(app);
    expect(await app.waitForEvent('member.up', 30_000)).toBeDefined();
    app.signal('SIGTERM');
    expect(await app.exited).toEqual({ code: 0, signal: null });
    const events = app.events().map((e) => e.event);
    expect(events).toContain('node.signal');
    expect(events).toContain('shutdown.phase');
    expect(app.linesLost).toBe(0);
  }, 60_000);
});
