import { describe, expect, it } from 'vitest';
import {
  type FailureDetectorEffect,
  onOwnReachability,
  onReachabilityReport,
  peersChanged,
  type ReachabilityReport,
  registerClusterMessages,
} from '../../packages/cluster/src/index.js';
import { type Message, MessageTypes } from '../../packages/core/src/index.js';
import { contextWith, envOf, grown, key, sends } from '../support/member-fixtures.js';

/**
 * A cut flips every ring target across it in the same heartbeat tick. One report per observer per
 * tick (not one per target) is what keeps a cut of 50 nodes from making each member judge its
 * view a few hundred times while the sides should be deciding.
 */

const report = (observer: number, changes: [number, boolean][]): ReachabilityReport => ({
  type: 'membership.reachability',
  observer: key(observer),
  changes: changes.map(([s, reachable]) => ({ subject: key(s), reachable })),
});

describe('reachability reports: one per observer and tick', () => {
  it('the failure detector tells the membership of every peer that crossed the line, in one effect', () => {
    const before = {
      peers: { [key(2)]: 'reachable', [key(3)]: 'suspect', [key(4)]: 'unreachable' },
    } as const;
    const step = peersChanged(before, {
      [key(2)]: 'unreachable',
      [key(3)]: 'unreachable',
      [key(4)]: 'reachable',
    });
    const told = step.effects.filter((e) => e.kind === 'tell-membership');
    expect(told).toEqual<FailureDetectorEffect[]>([
      {
        kind: 'tell-membership',
        changes: [
          { subject: key(2), reachable: false },
          { subject: key(3), reachable: false },
          { subject: key(4), reachable: true },
        ],
      },
    ]);
    // a tick that changes no verdict tells the membership nothing
    const calm = peersChanged(step.context, { ...step.context.peers, [key(2)]: 'unreachable' });
    expect(calm.effects.filter((e) => e.kind === 'tell-membership')).toEqual([]);
  });

  it('an observer sends each member one report, leaving out the news about itself', () => {
    const step = onOwnReachability(envOf(5), contextWith(grown(5)), [
      { subject: key(3), reachable: false },
      { subject: key(4), reachable: false },
    ]);
    const sent = sends(step)
      .filter((o) => o.to.kind === 'member')
      .map((o) => [
        (o.to as { node: { host: string } }).node.host,
        (o.message as ReachabilityReport).changes.map((c) => c.subject),
      ]);
    expect(sent).toEqual([
      ['10.0.0.1', [key(3), key(4)]],
      ['10.0.0.2', [key(3), key(4)]],
      ['10.0.0.3', [key(4)]],
      ['10.0.0.4', [key(3)]],
    ]);
    expect(step.context.observations).toEqual({ [key(3)]: [key(5)], [key(4)]: [key(5)] });
  });

  it('a member that would hear only about itself is sent nothing', () => {
    const step = onOwnReachability(envOf(5), contextWith(grown(3)), [{ subject: key(3), reachable: false }]);
    expect(
      sends(step)
        .filter((o) => o.to.kind === 'member')
        .map((o) => o.to),
    ).toEqual([
      { kind: 'member', node: { host: '10.0.0.1', port: 2552, uid: 'u1' } },
      { kind: 'member', node: { host: '10.0.0.2', port: 2552, uid: 'u2' } },
    ]);
  });

  it('a receiver applies every change in order, then judges its view once', () => {
    const ctx = contextWith(grown(5));
    const step = onReachabilityReport(
      envOf(2),
      ctx,
      report(5, [
        [3, false],
        [4, false],
        [1, false],
        [1, true],
      ]),
    );
    expect(step.context.observations).toEqual({ [key(3)]: [key(5)], [key(4)]: [key(5)] });
    // news it already has, and members it does not know, change nothing
    const again = onReachabilityReport(envOf(2), step.context, report(5, [[3, false]]));
    expect(again.context).toBe(step.context);
    expect(sends(again)).toEqual([]);
    const stranger = onReachabilityReport(envOf(2), ctx, report(5, [[9, false]]));
    expect(stranger.context).toBe(ctx);
    // an observer that is not a member is not heard at all
    expect(onReachabilityReport(envOf(2), ctx, report(9, [[3, false]])).context).toBe(ctx);
  });

  it('the wire rebuilds a report from its fields and refuses a malformed change', () => {
    const types = new MessageTypes();
    registerClusterMessages(types);
    const raw = {
      ...report(5, [
        [3, false],
        [4, true],
      ]),
      extra: 'dropped',
    } as unknown as Message;
    const parsed = types.parse(raw, undefined);
    expect(parsed.ok && parsed.message).toEqual(
      report(5, [
        [3, false],
        [4, true],
      ]),
    );
    const bad = (changes: unknown) =>
      types.parse({ type: 'membership.reachability', observer: key(5), changes } as Message, undefined);
    expect(bad([{ subject: 'not a key', reachable: false }]).ok).toBe(false);
    expect(bad([{ subject: key(3), reachable: 'no' }]).ok).toBe(false);
    expect(bad({ subject: key(3), reachable: false }).ok).toBe(false);
    expect(bad(Array.from({ length: 10_001 }, () => ({ subject: key(3), reachable: false }))).ok).toBe(false);
    // the observer must be the node the connection authenticated as
    const forged = types.parse(raw, { host: '10.0.0.4', port: 2552, uid: 'u4' });
    expect(forged.ok).toBe(false);
  });
});
