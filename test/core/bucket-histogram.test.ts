// doyen keeps its histograms itself (bucket-histogram.ts: prom-client's observe hashed the labels
// into a string on every call, a sixth of a local ask) and prom-client's registry renders them.
// The text must be what prom-client's own Histogram renders for the same observations, so
// scrapers and dashboards see no difference; the series an ask takes once must count.
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { fromTransition } from 'xstate';
import { BucketHistogram } from '../../packages/core/src/bucket-histogram.js';
import { type ActorRef, ActorSystem, AskTimeoutError, type Message } from '../../packages/core/src/index.js';

// prom-client is core's dependency, not the tests': loaded the way core resolves it
const { Histogram, Registry } = createRequire(new URL('../../packages/core/package.json', import.meta.url))(
  'prom-client',
) as typeof import('../../packages/core/node_modules/prom-client/index.js');

const BOUNDS = [0.001, 0.01, 0.1, 1];
const OBSERVATIONS: [Record<string, string>, number][] = [
  [{ outcome: 'settled' }, 0],
  [{ outcome: 'settled' }, 0.001], // on a bound: in that bucket (le is "less or equal")
  [{ outcome: 'settled' }, 0.05],
  [{ outcome: 'timeout' }, 5], // above every bound: +Inf only
  [{ outcome: 'quote"back\\slash\nnewline' }, 0.5], // label value escaping is the registry's
  [{ outcome: 'settled' }, 2.5],
];

async function renderBoth(labelNames: string[], observations: [Record<string, string>, number][]) {
  const theirs = new Registry();
  const ours = new Registry();
  const reference = new Histogram({
    name: 'doyen_x_seconds',
    help: 'x',
    labelNames,
    buckets: BOUNDS,
    registers: [theirs],
  });
  const histogram = new BucketHistogram('doyen_x_seconds', 'x', labelNames, BOUNDS, ours);
  for (const [labels, value] of observations) {
    reference.observe(labels, value);
    histogram.observe(labels, value);
  }
  return { theirs: await theirs.metrics(), ours: await ours.metrics() };
}

describe('BucketHistogram', () => {
  it("renders the text prom-client's Histogram renders for the same labelled observations", async () => {
    const { theirs, ours } = await renderBoth(['outcome'], OBSERVATIONS);
    expect(ours).toBe(theirs);
    expect(ours).toContain('doyen_x_seconds_bucket{le="0.001",outcome="settled"} 2');
    expect(ours).toContain('doyen_x_seconds_bucket{le="+Inf",outcome="settled"} 4');
    expect(ours).toContain('doyen_x_seconds_count{outcome="timeout"} 1');
  });

  it('renders an unlabelled histogram the same way too', async () => {
    const { theirs, ours } = await renderBoth(
      [],
      [
        [{}, 0.02],
        [{}, 0.002],
        [{}, 7],
      ],
    );
    expect(ours).toBe(theirs);
  });

  it('positive control: different observations render differently (the comparison can fail)', async () => {
    const theirs = new Registry();
    const ours = new Registry();
    new Histogram({
      name: 'doyen_x_seconds',
      help: 'x',
      labelNames: [],
      buckets: BOUNDS,
      registers: [theirs],
    }).observe(0.5);
    new BucketHistogram('doyen_x_seconds', 'x', [], BOUNDS, ours).observe({}, 0.05);
    expect(await ours.metrics()).not.toBe(await theirs.metrics());
  });

  it('a series taken once counts what is observed into it, in the shared histogram', () => {
    const histogram = new BucketHistogram('doyen_x_seconds', 'x', ['outcome'], BOUNDS, new Registry());
    const settled = histogram.series({ outcome: 'settled' });
    settled.observe(0.002);
    histogram.observe({ outcome: 'settled' }, 0.2);
    settled.observe(Number.NaN); // not a number: not counted
    expect(histogram.series({ outcome: 'settled' })).toBe(settled);
    expect(settled.count).toBe(2);
    expect(settled.sum).toBeCloseTo(0.202);
    expect([...settled.counts]).toEqual([0, 1, 0, 1, 0]);
  });

  it("counts an actor system's settled and timed-out asks", async () => {
    const system = new ActorSystem({ cluster: 'test', host: '127.0.0.1', port: 1 });
    try {
      type Ping = { type: 'ping'; replyTo: ActorRef };
      const echo = system.spawn(
        fromTransition((n: number, event: Message) => {
          const ping = event as Ping;
          if (n % 2 === 0) ping.replyTo.send({ type: 'pong' });
          return n + 1;
        }, 0),
        { name: 'echo' },
      );
      const ask = () => echo.ask((replyTo) => ({ type: 'ping', replyTo }) as Message, { timeout: 20 });
      await ask(); // answered
      await expect(ask()).rejects.toBeInstanceOf(AskTimeoutError); // ignored
      await ask(); // answered
      const text = await system.metrics.render();
      expect(text).toContain('doyen_ask_duration_seconds_count{outcome="settled"} 2');
      expect(text).toContain('doyen_ask_duration_seconds_count{outcome="timeout"} 1');
    } finally {
      system.terminate();
    }
  });
});
