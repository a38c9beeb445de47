// A hot path (the wire's frame and message counters, issue 29) adds to a counter series in place
// instead of `inc`, which builds and looks up the label key each time: the series is the one
// `inc`, `value` and the rendered metrics read, and it appears only once taken.
import { describe, expect, it } from 'vitest';
import { Metrics } from '../../packages/core/src/index.js';

describe('counter series taken once, added to in place', () => {
  it('is the series inc counts into and the exposition renders', async () => {
    const metrics = new Metrics();
    const user = metrics.counterSeries('doyen_wire_frames_sent_total', 'Frames sent', { lane: 'user' });
    user.value += 3;
    metrics.inc('doyen_wire_frames_sent_total', 'Frames sent', { lane: 'user' }, 2);
    user.value++;
    expect(metrics.value('doyen_wire_frames_sent_total', { lane: 'user' })).toBe(6);
    // another label set is another series
    expect(metrics.value('doyen_wire_frames_sent_total', { lane: 'system' })).toBe(0);
    expect(await metrics.render()).toMatch(/doyen_wire_frames_sent_total\{lane="user"\} 6/);
    // taken again: the same series
    expect(metrics.counterSeries('doyen_wire_frames_sent_total', 'Frames sent', { lane: 'user' })).toBe(user);
  });
});
