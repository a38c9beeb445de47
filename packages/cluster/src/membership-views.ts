import type { SbrViewMessage } from './downing/downing-messages.js';
import { isLive, memberKey } from './member.js';
import type { MembershipContext } from './membership-protocol.js';

/**
 * The views the membership machine publishes to its consumers after every change, built here on
 * the membership's side: a consumer reads its view and never the membership's context.
 */

/** For the downing machine: the live members and who reports whom unreachable. */
export function sbrViewMessage(selfKey: string, ctx: MembershipContext): SbrViewMessage {
  const m = ctx.membership!;
  return {
    type: 'sbr.view',
    selfKey,
    version: m.version,
    members: m.members
      .filter((x) => isLive(x.status))
      .map((x) => ({ key: memberKey(x), address: x.address, age: x.age, status: x.status, roles: x.roles })),
    observations: ctx.observations,
  };
}
