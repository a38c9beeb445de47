import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ConsoleGatherer } from '../../packages/doyen/src/console/console-gatherer.js';
import { ConsoleViewers, STREAM_COALESCE_MS } from '../../packages/doyen/src/console/console-viewers.js';
import type { NodeView } from '../../packages/doyen/src/console/node-view.js';
import { applyDelta, type ViewDelta } from '../../packages/doyen/src/console/view-delta.js';

/**
 * The console stream's coalescing is a leading-edge throttle (found by `pnpm bench console`: two
 * trailing 50 ms delays, the member's and the viewers', put every update past the 100 ms
 * target). A change after a quiet spell goes out on the next turn; a burst still goes out at
 * most once per `coalesceMs`, the newest view winning. Fake timers: the clock is the test's.
 */
const COALESCE_MS = 1000;

/** What ConsoleViewers uses of a response, recording the frames written. */
function fakeResponse(): { response: ServerResponse; frames: string[] } {
  const frames: string[] = [];
  const r = Object.assign(new EventEmitter(), {
    destroyed: false,
    writableLength: 0,
    writeHead: () => r,
    write: (text: string) => {
      if (text.startsWith('event:')) frames.push(text);
      return true;
    },
    end: () => {},
    destroy: () => {},
  });
  return { response: r as unknown as ServerResponse, frames };
}

/** A gatherer streaming to one viewer, and the frames that viewer was sent. */
function gathererWithViewer(): { gatherer: ConsoleGatherer; viewers: ConsoleViewers; frames: string[] } {
  const gatherer = new ConsoleGatherer({ historyMs: 60_000, historyBytes: 1 << 20 });
  const viewers = new ConsoleViewers({ coalesceMs: COALESCE_MS, pingMs: 60_000 }, () => {});
  gatherer.listen(viewers);
  const { response, frames } = fakeResponse();
  viewers.add('127.0.0.1', response);
  return { gatherer, viewers, frames };
}

const view = (name: string) => ({ key: 'n#1', name }) as unknown as NodeView;

describe('console stream coalescing', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('sends the first change after a quiet spell at once, then at most one view per coalesceMs', async () => {
    const viewers = new ConsoleViewers({ coalesceMs: COALESCE_MS, pingMs: 60_000 }, () => {});
    const { response, frames } = fakeResponse();
    viewers.add('127.0.0.1', response);

    viewers.view(view('first'));
    expect(frames).toHaveLength(0); // not inside the caller's step
    await Promise.resolve(); // but without waiting for a timer (no clock advanced)
    expect(frames).toHaveLength(1);
    expect(frames[0]).toContain('"first"');

    // a burst right after: held back until coalesceMs after the last frame, newest wins
    vi.advanceTimersByTime(10);
    viewers.view(view('second'));
    viewers.view(view('third'));
    vi.advanceTimersByTime(COALESCE_MS - 20);
    expect(frames).toHaveLength(1);
    vi.advanceTimersByTime(20);
    expect(frames).toHaveLength(2);
    expect(frames[1]).toContain('"third"');

    // quiet again for longer than the window: the next change goes at once
    vi.advanceTimersByTime(3 * COALESCE_MS);
    viewers.view(view('fourth'));
    await Promise.resolve();
    expect(frames).toHaveLength(3);
    expect(frames[2]).toContain('"fourth"');
    viewers.close();
  });

  it('sends the views that arrive in one step together, each node once, the newest winning', async () => {
    const viewers = new ConsoleViewers({ coalesceMs: COALESCE_MS, pingMs: 60_000 }, () => {});
    const { response, frames } = fakeResponse();
    viewers.add('127.0.0.1', response);
    viewers.view(view('old'));
    viewers.view({ key: 'm#2', name: 'other' } as unknown as NodeView);
    viewers.view(view('new'));
    await Promise.resolve();
    expect(frames).toHaveLength(2);
    expect(frames.join('')).toContain('"new"');
    expect(frames.join('')).not.toContain('"old"');
    viewers.close();
  });

  it('sends nothing after close, even what was scheduled before it', async () => {
    const viewers = new ConsoleViewers({ coalesceMs: COALESCE_MS, pingMs: 60_000 }, () => {});
    const { response, frames } = fakeResponse();
    viewers.add('127.0.0.1', response);
    viewers.view(view('late'));
    viewers.close();
    await Promise.resolve();
    vi.advanceTimersByTime(COALESCE_MS);
    expect(frames).toHaveLength(0);
  });

  it("sends the serving node's own view without waiting out the window, with what was held", async () => {
    const viewers = new ConsoleViewers(
      { coalesceMs: COALESCE_MS, pingMs: 60_000 },
      () => {},
      (key) => key === 'self#1',
    );
    const { response, frames } = fakeResponse();
    viewers.add('127.0.0.1', response);
    viewers.view(view('first'));
    await Promise.resolve();
    expect(frames).toHaveLength(1);
    // positive control: another node's view inside the window is held
    vi.advanceTimersByTime(10);
    viewers.view(view('held'));
    await Promise.resolve();
    expect(frames).toHaveLength(1);
    // the own view goes at once, and the held one with it
    viewers.view({ key: 'self#1', name: 'own' } as unknown as NodeView);
    await Promise.resolve();
    expect(frames).toHaveLength(3);
    expect(frames.join('')).toContain('"held"');
    expect(frames.join('')).toContain('"own"');
    // nothing left for the cancelled timer to send
    vi.advanceTimersByTime(2 * COALESCE_MS);
    expect(frames).toHaveLength(3);
    viewers.close();
  });

  it('by default a burst waits one drawing frame (16 ms), not the 50 ms of whole views (positive control: 50 ms set)', async () => {
    const burst = async (limits: { coalesceMs?: number }) => {
      const viewers = new ConsoleViewers({ ...limits, pingMs: 60_000 }, () => {});
      const { response, frames } = fakeResponse();
      viewers.add('127.0.0.1', response);
      viewers.view(view('first'));
      await Promise.resolve();
      viewers.view(view('second'));
      vi.advanceTimersByTime(STREAM_COALESCE_MS);
      const written = frames.length;
      vi.advanceTimersByTime(100);
      viewers.close();
      return written;
    };
    expect(STREAM_COALESCE_MS).toBe(16);
    expect(await burst({})).toBe(2);
    expect(await burst({ coalesceMs: 50 })).toBe(1);
  });

  /** A member's gathered view (the parts a delta touches), and its change with `set` / `machines` given. */
  const memberView = (at: number) =>
    ({
      key: 'm#2',
      address: 'm',
      roles: [],
      incarnation: 1,
      at,
      membershipVersion: 1,
      members: [{ key: 'm#2', address: 'm', status: 'up', roles: [], ageRank: 0 }],
      unreachable: [],
      reachability: [],
      sbr: { strategy: 'keep-majority', state: 'stable', stableInMs: null },
      singletons: [],
      machines: [{ id: '/system/x', state: 'a', transitions: [] }],
    }) as unknown as Omit<NodeView, 'stale' | 'rev'>;

  it("sends a member's change carrying a cluster fact at once, inside the window; other changes wait (positive control)", async () => {
    const { gatherer, viewers, frames } = gathererWithViewer();
    const member = () => true;
    gatherer.receive('m#2', { view: memberView(1), version: 1, events: [] }, member);
    await Promise.resolve();
    expect(frames).toHaveLength(1);

    // positive control: a machine's transition inside the window waits for it
    vi.advanceTimersByTime(10);
    const machines: ViewDelta = {
      base: 1,
      version: 2,
      at: 2,
      machines: { put: [{ id: '/system/x', state: 'b', transitions: [] }] },
    };
    gatherer.receive('m#2', { delta: machines, events: [] }, member);
    await Promise.resolve();
    expect(frames).toHaveLength(1);

    // a member reported unreachable goes at once (the newest view of the node, as a delta)
    const unreachable: ViewDelta = {
      base: 2,
      version: 3,
      at: 3,
      set: {
        unreachable: ['z#9'],
        reachability: [{ observer: 'm#2', subject: 'z#9', status: 'unreachable' }],
      },
    };
    gatherer.receive('m#2', { delta: unreachable, events: [] }, member);
    await Promise.resolve();
    expect(frames).toHaveLength(2);
    expect(frames[1]).toMatch(/^event: delta/);
    expect(frames[1]).toContain('"status":"unreachable"');
    viewers.close();
  });

  it("streams a member's own delta between the serving node's revisions, which makes the gathered view on the page", async () => {
    const { gatherer, viewers, frames } = gathererWithViewer();
    const member = () => true;
    // another node's view in between: the revisions are one counter for all nodes
    gatherer.receive('m#2', { view: memberView(1), version: 7, events: [] }, member);
    gatherer.receive('o#3', { view: { ...memberView(1), key: 'o#3' }, version: 1, events: [] }, member);
    await Promise.resolve();
    const held = gatherer.view('m#2')!;
    const delta: ViewDelta = {
      base: 7,
      version: 8,
      at: 5,
      set: { unreachable: ['o#3'] },
      members: { put: [{ key: 'm#2', address: 'm', status: 'leaving', roles: [], ageRank: 0 }] },
    };
    vi.advanceTimersByTime(2 * COALESCE_MS);
    gatherer.receive('m#2', { delta, events: [] }, member);
    await Promise.resolve();
    const frame = frames.at(-1)!;
    expect(frame).toMatch(/^event: delta/);
    const streamed = JSON.parse(frame.split('data: ')[1]!) as ViewDelta & { key: string; stale: boolean };
    const gathered = gatherer.view('m#2')!;
    expect(streamed).toMatchObject({ key: 'm#2', base: held.rev, version: gathered.rev, stale: false });
    const applied = applyDelta(held, held.rev!, streamed);
    expect('view' in applied && { ...applied.view, rev: gathered.rev }).toEqual(gathered);
    viewers.close();
  });
});
