import { describe, expect, it } from 'vitest';
import { FieldError } from '../../packages/core/src/index.js';
import { ConsoleGatherer } from '../../packages/doyen/src/console/console-gatherer.js';
import {
  CONSOLE_CAPS,
  type ConsoleUpdate,
  readViewDelta,
  type WireView,
} from '../../packages/doyen/src/console/console-messages.js';
import { ConsolePublisher } from '../../packages/doyen/src/console/console-publisher.js';
import type { ConsoleService } from '../../packages/doyen/src/console/console-service.js';
import { streamDelta } from '../../packages/doyen/src/console/console-viewers.js';
import type { ConsoleMemberRow, NodeView } from '../../packages/doyen/src/console/node-view.js';
import { applyDelta, diffView, type ViewDelta } from '../../packages/doyen/src/console/view-delta.js';
import { nodesClosedAfterEach, startLocalNode } from '../support/doyen-nodes.js';
import { eventually } from '../support/wait.js';

/**
 * A member sends the serving node what changed in its view, not the whole view again (issue 30:
 * at 50 nodes a kill made 49 whole views travel, be read, merged and streamed). A change applies
 * on the version it was made from only; a receiver that lost one asks for the whole view. What a
 * change carries is read at the boundary with the caps of a whole view, and applying changes
 * cannot grow a view past them; each cap has its positive control.
 */
const SELF = '127.0.0.1:2552#a1';
const SERVING = '127.0.0.1:2553#b1';

const row = (i: number, status = 'up'): ConsoleMemberRow => ({
  key: `127.0.0.1:${3000 + i}#u${i}`,
  address: `127.0.0.1:${3000 + i}`,
  status,
  roles: [],
  ageRank: i,
});

function viewOf(members: ConsoleMemberRow[], at = 1000, extra: Partial<WireView> = {}): WireView {
  return {
    key: SELF,
    address: '127.0.0.1:2552',
    roles: [],
    incarnation: 1,
    at,
    membershipVersion: members.length,
    members,
    coordinator: members[0]?.key,
    unreachable: [],
    reachability: [],
    sbr: { strategy: 'keep-majority', stableInMs: null },
    singletons: [],
    machines: [],
    partitions: {
      version: 1,
      owners: Array.from({ length: 271 }, (_, p) => members[p % members.length]!.key),
      backups: Array.from({ length: 271 }, () => []),
    },
    ...extra,
  };
}

const fifty = Array.from({ length: 50 }, (_, i) => row(i));
const { at: _a, ...untimed } = viewOf(fifty);
const withoutTime = (v: WireView) => {
  const { at: _, ...rest } = v;
  return rest;
};

describe('view deltas', () => {
  it('a kill at 50 nodes: the change is one record and one row, and applying it gives the next view', () => {
    const before = viewOf(fifty);
    const killed = fifty[49]!;
    const after = viewOf(
      fifty.map((r) => (r === killed ? { ...r, status: 'down' } : r)),
      1100,
      {
        membershipVersion: 50,
        unreachable: [killed.key],
        reachability: [{ observer: SELF, subject: killed.key, status: 'unreachable' }],
      },
    );
    const delta = diffView(before, after, 7)!;
    expect(delta.base).toBe(7);
    expect(delta.version).toBe(8);
    expect(delta.members?.put).toEqual([{ ...killed, status: 'down' }]);
    expect(delta.members?.keys).toBeUndefined();
    expect(delta.partitions).toBeUndefined();
    expect(Object.keys(delta.set ?? {}).sort()).toEqual(['reachability', 'unreachable']);
    // a twentieth of the view, or less
    expect(JSON.stringify(delta).length * 20).toBeLessThan(JSON.stringify(after).length);
    const applied = applyDelta(before, 7, delta);
    expect('view' in applied && applied.view).toEqual(after);
  });

  it('a member leaving, one joining, partitions moving and an optional field going: applied equals the next view', () => {
    const before = viewOf(fifty);
    const members = [...fifty.slice(1), row(60)];
    const after = viewOf(members, 1200, {
      partitions: {
        version: 2,
        owners: before.partitions!.owners.map((o, p) => (p < 3 ? members[5]!.key : o)),
        backups: before.partitions!.backups.map((b, p) => (p === 9 ? [members[2]!.key] : b)),
        moving: [1, 2],
      },
    });
    delete (after as { coordinator?: string }).coordinator;
    const delta = diffView(before, after, 1)!;
    expect(delta.members?.keys).toHaveLength(50);
    expect(delta.members?.put).toEqual([row(60)]);
    expect(delta.partitions?.owners.map(([p]) => p)).toEqual([0, 1, 2]);
    expect(delta.partitions?.backups).toEqual([[9, [members[2]!.key]]]);
    expect(delta.unset).toEqual(['coordinator']);
    const applied = applyDelta(before, 1, delta);
    expect('view' in applied && applied.view).toEqual(after);
    // only the time changed: no delta (the publisher keeps the version)
    expect(diffView(after, { ...after, at: 5000 }, 2)).toBeUndefined();
  });

  it('machines go as the ones that changed; applied equals the next view', () => {
    const machine = (id: string, state: string, at: number) => ({
      id: `/system/${id}`,
      state,
      transitions: [{ at, event: 'x', state }],
    });
    const ids = ['membership', 'heartbeat', 'downing', 'receptionist'];
    const before = viewOf(fifty, 1000, { machines: ids.map((id) => machine(id, 'stable', 1)) });
    const after = viewOf(fifty, 1100, {
      machines: ids.map((id) =>
        id === 'downing' ? machine(id, 'unstable', 1050) : machine(id, 'stable', 1),
      ),
    });
    const delta = diffView(before, after, 1)!;
    expect(delta.machines).toEqual({ put: [after.machines[2]] });
    expect(delta.set).toBeUndefined();
    const applied = applyDelta(before, 1, delta);
    expect('view' in applied && applied.view).toEqual(after);
    const unknown: ViewDelta = { ...delta, machines: { put: [machine('nope', 'x', 1)] } };
    expect(applyDelta(before, 1, unknown)).toEqual({ mismatch: 'machines' });
  });

  it('applies on its own version only; a row or a partition the view lacks is a mismatch', () => {
    const before = viewOf(fifty);
    const after = viewOf(
      fifty.map((r, i) => (i === 3 ? { ...r, status: 'leaving' } : r)),
      1100,
    );
    const delta = diffView(before, after, 4)!;
    expect(applyDelta(before, 3, delta)).toEqual({ mismatch: 'version' });
    expect('view' in applyDelta(before, 4, delta)).toBe(true); // positive control
    const foreignRow: ViewDelta = { ...delta, members: { put: [row(99)] } };
    expect(applyDelta(before, 4, foreignRow)).toEqual({ mismatch: 'members' });
    const missingRow: ViewDelta = { ...delta, members: { put: [], keys: [row(0).key, row(99).key] } };
    expect(applyDelta(before, 4, missingRow)).toEqual({ mismatch: 'members' });
    const outside: ViewDelta = {
      ...delta,
      partitions: { version: 2, length: 10, owners: [[10, row(0).key]], backups: [] },
    };
    expect(applyDelta(before, 4, outside)).toEqual({ mismatch: 'partitions' });
  });

  it('applying changes cannot grow a view past the caps (positive control: no cap, it grows)', () => {
    const before = viewOf(fifty);
    const many = Array.from({ length: 60 }, (_, i) => row(i));
    const grow: ViewDelta = {
      base: 1,
      version: 2,
      at: 2000,
      members: { put: many.slice(50), keys: many.map((r) => r.key) },
    };
    expect(applyDelta(before, 1, grow, { members: 55, machines: 32, partitions: 8192 })).toEqual({
      mismatch: 'members',
    });
    const grown = applyDelta(before, 1, grow, {
      members: Number.POSITIVE_INFINITY,
      machines: 32,
      partitions: 8192,
    });
    expect('view' in grown && grown.view.members).toHaveLength(60);
    const wide: ViewDelta = {
      base: 1,
      version: 2,
      at: 2000,
      partitions: { version: 2, length: 300, owners: [], backups: [] },
    };
    expect(applyDelta(before, 1, wide, { members: 1024, machines: 32, partitions: 271 })).toEqual({
      mismatch: 'partitions',
    });
    const widened = applyDelta(before, 1, wide, {
      members: 1024,
      machines: 32,
      partitions: Number.POSITIVE_INFINITY,
    });
    expect('view' in widened && widened.view.partitions?.owners).toHaveLength(300);
  });
});

describe('a delta at the boundary', () => {
  const valid: ViewDelta = {
    base: 1,
    version: 2,
    at: 2000,
    set: { unreachable: [row(1).key] },
    members: { put: [row(1, 'down')] },
    machines: { put: [{ id: '/system/downing', state: 'unstable', transitions: [] }] },
    partitions: { version: 2, length: 271, owners: [[5, row(2).key]], backups: [[5, [row(3).key]]] },
  };

  it('reads a valid one (positive control) and rebuilds it from its fields only', () => {
    const read = readViewDelta({ ...valid, extra: 'x'.repeat(10_000) }, 'delta');
    expect(read).toEqual(valid);
    expect('extra' in read).toBe(false);
  });

  it.each([
    [
      'a partition index past the cap',
      { partitions: { ...valid.partitions!, owners: [[CONSOLE_CAPS.partitions, '']] } },
    ],
    [
      'a table longer than the cap',
      { partitions: { ...valid.partitions!, length: CONSOLE_CAPS.partitions + 1 } },
    ],
    ['a cell that is not a pair', { partitions: { ...valid.partitions!, owners: [[5]] } }],
    [
      'more member rows than the cap',
      { members: { put: Array.from({ length: CONSOLE_CAPS.members + 1 }, (_, i) => row(i)) } },
    ],
    ['a member key that is not one', { members: { put: [{ ...row(1), key: 'nope' }] } }],
    ['an unknown field to drop', { unset: ['members'] }],
    [
      'a reachability list past the cap',
      {
        set: {
          reachability: Array.from({ length: CONSOLE_CAPS.reachability + 1 }, () => ({
            observer: SELF,
            subject: SELF,
            status: 'unreachable',
          })),
        },
      },
    ],
    ['a negative base', { base: -1 }],
    [
      'more machines than the cap',
      {
        machines: {
          put: Array.from({ length: CONSOLE_CAPS.machines + 1 }, (_, i) => ({
            id: `/system/m${i}`,
            state: 's',
            transitions: [],
          })),
        },
      },
    ],
  ])('refuses %s', (_what, change) => {
    expect(() => readViewDelta({ ...valid, ...change }, 'delta')).toThrow(FieldError);
  });
});

/** A publisher whose updates go straight to a gatherer (or nowhere while `lose` is set). */
function pair(views: WireView[]) {
  let now = 10_000;
  let current = 0;
  const sent: ConsoleUpdate[] = [];
  const gatherer = new ConsoleGatherer({ historyMs: 60_000, historyBytes: 1 << 24 }, () => now);
  const refusals: string[] = [];
  const state = { lose: false };
  const publisher = new ConsolePublisher(
    () => SELF,
    () => views[current]!,
    (_to, update) => {
      sent.push(update);
      if (state.lose) return;
      const refusal = gatherer.receive(SELF, update, () => true);
      if (refusal) {
        refusals.push(refusal);
        // what the service does on `resync`: ask for the whole view
        publisher.subscribe(SERVING, 15_000, true);
      }
    },
    () => now,
  );
  publisher.subscribe(SERVING, 15_000);
  return {
    gatherer,
    publisher,
    sent,
    refusals,
    state,
    step(i: number) {
      current = i;
      now += 100;
      publisher.flush(false);
    },
  };
}

describe('publisher and gatherer', () => {
  const v0 = viewOf(fifty, 1000);
  const v1 = viewOf(
    fifty.map((r, i) => (i === 7 ? { ...r, status: 'leaving' } : r)),
    1100,
  );
  const v2 = viewOf(
    fifty.map((r, i) => (i === 7 ? { ...r, status: 'exiting' } : r)),
    1200,
  );
  const v3 = viewOf(
    fifty.map((r, i) => (i === 7 ? { ...r, status: 'removed' } : r)),
    1300,
  );

  it('sends the whole view first, then changes from the version the subscriber holds', () => {
    const p = pair([v0, v1, v2]);
    p.step(0);
    p.step(1);
    p.step(1); // nothing changed: nothing sent
    p.step(2);
    expect(
      p.sent.map((u) =>
        u.view ? `view@${u.version}` : u.delta ? `delta ${u.delta.base}→${u.delta.version}` : 'empty',
      ),
    ).toEqual(['view@1', 'delta 1→2', 'delta 2→3']);
    expect(p.refusals).toEqual([]);
    expect(withoutTime(p.gatherer.view(SELF)! as unknown as WireView)).toMatchObject(withoutTime(v2));
    // a newcomer gets the whole view
    p.publisher.subscribe('127.0.0.1:2554#c1', 15_000);
    p.step(2);
    expect(p.sent.at(-1)).toMatchObject({ view: expect.anything(), version: 3 });
    expect(untimed.members).toHaveLength(50);
  });

  it('a lost change: the next one does not apply, the gatherer asks for the whole view and has the newest again', () => {
    const p = pair([v0, v1, v2, v3]);
    p.step(0);
    p.state.lose = true;
    p.step(1);
    p.state.lose = false;
    p.step(2);
    expect(p.refusals).toEqual(['resync']);
    // the view stayed at the last one that applied (not a half-applied one)
    expect(p.gatherer.view(SELF)!.members[7]!.status).toBe('up');
    p.step(2); // the whole view, asked for
    expect(p.sent.at(-1)).toMatchObject({ version: 3 });
    expect(p.sent.at(-1)!.view).toBeDefined();
    expect(p.gatherer.view(SELF)!.members[7]!.status).toBe('exiting');
    p.step(3);
    expect(p.sent.at(-1)!.delta).toBeDefined();
    expect(p.gatherer.view(SELF)!.members[7]!.status).toBe('removed');
    expect(p.refusals).toEqual(['resync']);
  });

  it('a delta before any whole view is a resync, and so is one after the gatherer lost track', () => {
    const gatherer = new ConsoleGatherer({ historyMs: 60_000, historyBytes: 1 << 24 });
    const delta = diffView(v0, v1, 1)!;
    expect(gatherer.receive(SELF, { delta, events: [] }, () => true)).toBe('resync');
    expect(gatherer.view(SELF)).toBeUndefined();
    expect(gatherer.receive(SELF, { view: v0, version: 1, events: [] }, () => true)).toBeUndefined();
    expect(gatherer.receive(SELF, { delta, events: [] }, () => true)).toBeUndefined(); // positive control
    expect(gatherer.receive(SELF, { delta, events: [] }, () => true)).toBe('resync'); // replayed
  });
});

describe('the stream to the page', () => {
  it('carries a view as the change from the revision it carried before', () => {
    const gatherer = new ConsoleGatherer({ historyMs: 60_000, historyBytes: 1 << 24 });
    const carried: NodeView[] = [];
    gatherer.listen({ view: (v) => carried.push(v), events: () => {}, gone: () => {} });
    gatherer.receive(SELF, { view: viewOf(fifty, 1000), version: 1, events: [] }, () => true);
    const changed = viewOf(
      fifty.map((r, i) => (i === 2 ? { ...r, status: 'leaving' } : r)),
      1100,
    );
    gatherer.receive(SELF, { delta: diffView(viewOf(fifty, 1000), changed, 1)!, events: [] }, () => true);
    const [first, second] = carried;
    expect(second!.rev).toBeGreaterThan(first!.rev!);
    const frame = streamDelta(first!, second!)!;
    expect(frame).toMatchObject({ key: SELF, base: first!.rev, version: second!.rev, stale: false });
    expect(frame.members?.put).toHaveLength(1);
    const applied = applyDelta(first!, first!.rev!, frame);
    expect('view' in applied && withoutTime(applied.view as unknown as WireView)).toMatchObject(
      withoutTime(changed),
    );
    // a view without a revision (none to go from) goes whole
    expect(streamDelta({ ...first!, rev: undefined }, second!)).toBeUndefined();
  });
});

describe('the console service on a change it cannot apply', () => {
  const nodes = nodesClosedAfterEach();

  it('asks the member for its whole view (counted as resync) and applies changes again after it', async () => {
    const { node, httpPort } = await startLocalNode(
      { cluster: 'console-resync', partitions: { count: 0 } },
      {},
      nodes,
    );
    expect((await fetch(`http://127.0.0.1:${httpPort}/console/state`)).status).toBe(200);
    const service = (node as unknown as { console: ConsoleService }).console;
    const self = service.selfKey;
    const version = () =>
      (service.gatherer as unknown as { nodes: Map<string, { version: number | undefined }> }).nodes.get(self)
        ?.version;
    await eventually(() => version() !== undefined, { what: 'own view gathered whole' });
    const take = (delta: ViewDelta) =>
      (service as unknown as { take(from: string, u: ConsoleUpdate): void }).take(self, {
        type: 'console.update',
        from: self,
        delta,
        events: [],
      });
    const resyncs = () =>
      node.system.metrics.value('doyen_console_updates_refused_total', { reason: 'resync' });
    const held = version()!;
    const view = service.gatherer.view(self)!;
    // positive control: a change on the version held applies, nothing refused
    take({ base: held, version: held + 1, at: Date.now(), set: { successor: view.key } });
    expect(version()).toBe(held + 1);
    expect(resyncs() ?? 0).toBe(0);
    // a change from a version not held: refused, counted, the whole view asked for and taken
    take({ base: held + 50, version: held + 51, at: Date.now(), set: { name: 'never' } });
    expect(resyncs()).toBe(1);
    expect(service.gatherer.view(self)!.name).not.toBe('never');
    expect(version()).toBeUndefined(); // no change applies until the whole view came
    await eventually(() => version() !== undefined, { what: 'the whole view again' });
  }, 30_000);
});
