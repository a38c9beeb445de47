import { nodeKey } from '@doyen/core';
import type { SbrViewMessage } from '../downing/downing-messages.js';
import { isLive, nodeOf } from '../model/member.js';
import { coordinatorOf, type Membership } from '../model/membership.js';
import type { SbcView } from '../split-brain-checker/split-brain-checker-messages.js';

/**
 * The views the membership machine publishes to its consumers after every change, built here on
 * the membership's side: a consumer reads its view and never the membership's context.
 */

/** What a view is built from: the membership and who reports whom unreachable. */
export interface PublishedState {
  readonly membership: Membership | undefined;
  /** subject key -> observers (keys) that currently report it unreachable. */
  readonly observations: Readonly<Record<string, readonly string[]>>;
}

/** For the downing machine: the live members and who reports whom unreachable. */
export function sbrViewMessage(selfKey: string, ctx: PublishedState): SbrViewMessage {
  const m = ctx.membership!;
  return {
    type: 'sbr.view',
    selfKey,
    version: m.version,
    members: m.members
      .filter((x) => isLive(x.status))
      .map((x) => ({ key: nodeKey(x), address: x.address, age: x.age, status: x.status, roles: x.roles })),
    observations: ctx.observations,
  };
}

/** For the split-brain checker: who coordinates, how big this side is, and whom to probe. */
export function sbcView(selfKey: string, ctx: PublishedState): SbcView {
  const m = ctx.membership!;
  const coordinator = coordinatorOf(m);
  const members = m.members.filter((x) => isLive(x.status));
  return {
    type: 'sbc.view',
    isCoordinator: coordinator !== undefined && nodeKey(coordinator) === selfKey,
    coordinator: coordinator && nodeOf(coordinator),
    coordinatorKey: coordinator && nodeKey(coordinator),
    size: members.length,
    failed: m.failed.map((f) => {
      const n = nodeOf(f);
      return { host: n.host, port: n.port };
    }),
    memberAddresses: members.map((x) => x.address),
  };
}
