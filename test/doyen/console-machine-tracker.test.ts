import { describe, expect, it } from 'vitest';
import { createMachine } from 'xstate';
import { MachineTracker } from '../../packages/doyen/src/console/machine-tracker.js';
import { makeCoreSystem } from '../support/core-system.js';

const toggle = createMachine({
  id: 'toggle',
  initial: 'off',
  context: { big: 'x'.repeat(10_000) },
  states: { off: { on: { flip: 'on' } }, on: { on: { flip: 'off' } } },
});

/** A system with one protocol-like machine under /system/, and a count of snapshot listeners added. */
function setUp() {
  const { system, scheduler } = makeCoreSystem();
  const ref = system.spawn(toggle, { name: 'toggle', parent: 'system' });
  let listeners = 0;
  const subscribe = system.subscribeSnapshots.bind(system);
  system.subscribeSnapshots = ((r: Parameters<typeof subscribe>[0], l: Parameters<typeof subscribe>[1]) => {
    listeners++;
    return subscribe(r, l);
  }) as typeof system.subscribeSnapshots;
  return { system, scheduler, ref, listeners: () => listeners };
}

describe('the console machine tracker', () => {
  it('watches nothing until someone subscribed to the console: an idle node pays nothing per event', () => {
    const { system, scheduler, ref, listeners } = setUp();
    const tracker = new MachineTracker(system, () => {});
    tracker.rescan();
    ref.send({ type: 'flip' });
    scheduler.runAll();
    expect(listeners()).toBe(0);
    expect(tracker.views()).toEqual([]);
    tracker.close();
  });

  it('positive control: once active it watches the machine and records its transitions; inactive again, it lets go', () => {
    const { system, scheduler, ref, listeners } = setUp();
    const tracker = new MachineTracker(system, () => {});
    tracker.setActive(true);
    expect(listeners()).toBe(1);
    ref.send({ type: 'flip' });
    scheduler.runAll();
    const [view] = tracker.views();
    expect(view?.id).toBe('/system/toggle');
    expect(view?.state).toBe('on');
    expect(view?.transitions.map((t) => t.state)).toEqual(['on']);
    tracker.setActive(false);
    expect(tracker.views()).toEqual([]);
    tracker.close();
  });
});
