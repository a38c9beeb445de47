import { describe, expect, it } from 'vitest';
import { createActor, SimulatedClock } from 'xstate';
import {
  type DowningContext,
  decide,
  downingPolicy,
  initialDowningContext,
  inputOf,
  observe,
  settle,
} from '../../packages/cluster/src/downing/downing-decisions.js';
import type { DowningEvent } from '../../packages/cluster/src/downing/downing-messages.js';
import { partitionView, resolve, type StrategyConfig } from '../../packages/cluster/src/index.js';
import {
  DOWNING_DELAY_EVENTS,
  downingPaths,
  keepMajorityDowning,
  member,
  range,
  reach,
  reports,
  view,
} from '../support/downing-fixtures.js';
import { stateName } from '../support/machine-paths.js';

/**
 * The downing machine takes each event once (issue 27): `decide` computes the next context with
 * what follows from it (who is unreachable, the strategy's resolution) and what the event changed
 * (`news`), the guards read only that, and every route settles the news. Nothing is cached
 * beside the context, so the context must always hold what a fresh computation would give.
 */

const STRATEGY: StrategyConfig = { strategy: 'keep-majority' };
const POLICY = downingPolicy(STRATEGY, false, undefined);

/** Does the context hold what a fresh computation from its view, reachability and absentees gives? */
function consistent(ctx: DowningContext): boolean {
  const input = inputOf(ctx);
  if (!input) return ctx.partition === undefined && ctx.resolution === undefined;
  const fresh = partitionView(input);
  const asLists = (p: typeof fresh | undefined) =>
    p && { u: [...p.unreachable].sort(), i: [...p.indirect].sort(), c: p.clean.map((m) => m.key) };
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  const up = input.members.filter((m) => m.status === 'up').map((m) => m.key);
  return (
    same(asLists(ctx.partition), asLists(fresh)) &&
    same(ctx.resolution, resolve(STRATEGY, input, fresh)) &&
    same([...ctx.up].sort(), up.sort())
  );
}

describe('downing decisions: one event, one decision', () => {
  const all = range(1, 5).map((i) => member(i));

  it('decide leaves the news for the guards, settle clears it, observe leaves none', () => {
    const calm = observe(POLICY, initialDowningContext, view(1, all)).context;
    const step = decide(
      POLICY,
      observe(POLICY, calm, reach([2, 3])).context,
      view(1, all, reports(1, [4, 5]), 2),
    );
    expect(step.context.news).toEqual({
      recanted: false,
      memberUp: false,
      reachabilityChanged: true,
      losingStill: false,
    });
    expect(settle(step.context).context.news).toBeUndefined();
    expect(settle(calm).context).toBe(calm); // nothing to settle: the same context
    expect(calm.news).toBeUndefined();
    expect(consistent(step.context)).toBe(true);
  });

  it('a member becoming up is news; a joining member is not', () => {
    const ctx = observe(POLICY, initialDowningContext, view(1, [...all, member(6, 'joining')])).context;
    expect(decide(POLICY, ctx, view(1, [...all, member(6, 'joining')], {}, 2)).context.news?.memberUp).toBe(
      false,
    );
    expect(decide(POLICY, ctx, view(1, [...all, member(6)], {}, 2)).context.news?.memberUp).toBe(true);
  });

  const EVENTS: DowningEvent[] = [
    view(1, all),
    view(1, all, reports(1, [4, 5]), 2),
    view(1, all, reports(4, [1, 2, 3]), 3),
    view(1, all, { ...reports(2, [3]), ...reports(3, [2]) }, 4),
    view(1, all.slice(0, 4), reports(1, [4]), 5),
    view(1, [...all, member(6)], reports(1, [4, 5]), 6),
    reach([2, 3, 4, 5]),
    reach([2, 3]),
    reach([]),
    { type: 'sbr.forget-absent' } as unknown as DowningEvent,
    ...DOWNING_DELAY_EVENTS,
  ];
  const logic = keepMajorityDowning;
  const paths = downingPaths(EVENTS, true);

  it('on every path: at rest no news is left unrouted, and the context holds what a fresh computation gives', () => {
    const states = new Set<string>();
    let checked = 0;
    for (const path of paths) {
      const actor = createActor(
        logic(() => {}),
        { clock: new SimulatedClock() },
      ).start();
      for (const step of path.steps) {
        if (step.event.type.startsWith('xstate.init')) continue;
        actor.send(step.event);
        const ctx = actor.getSnapshot().context;
        expect(ctx.news, `news left after ${step.event.type}`).toBeUndefined();
        expect(consistent(ctx), `stale context after ${step.event.type}`).toBe(true);
        checked++;
      }
      states.add(stateName(actor.getSnapshot().value));
    }
    // the paths do reach every routing state, with members remembered as absent on some
    for (const state of ['stable', 'unstable.waiting', 'unstable.healed', 'decided'])
      expect(states).toContain(state);
    expect(paths.some((p) => p.state.context.absent.length > 0)).toBe(true);
    expect(checked).toBeGreaterThan(50);
  });

  it('positive control: the consistency check fails on a context changed without its derived parts', () => {
    const troubled = paths.map((p) => p.state.context).find((c) => (c.partition?.unreachable.size ?? 0) > 0);
    expect(troubled).toBeDefined();
    expect(consistent(troubled!)).toBe(true);
    expect(consistent({ ...troubled!, ownReachable: new Set(all.map((m) => m.key)) })).toBe(false);
    const remembered = paths
      .map((p) => p.state.context)
      .find((c) => c.absent.length > 0 && (c.partition?.unreachable.size ?? 0) > 0);
    expect(remembered).toBeDefined();
    expect(consistent({ ...remembered!, absent: [] })).toBe(false);
  });
});
