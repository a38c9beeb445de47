import {
  addJoiner,
  type Env,
  formCluster,
  initialContext,
  type Join,
  type Membership,
  type MembershipContext,
  type MembershipStep,
  nodeOf,
  type Outbound,
  resolveClusterConfig,
  setStatus,
} from '../../packages/cluster/src/index.js';
import { type ActorRef, nodeKey, type UniqueNodeAddress } from '../../packages/core/src/index.js';

/** Member n of the membership tests: 10.0.0.n:2552, uid `un`, named `nn`, no roles. */
export const node = (n: number) => ({
  address: `10.0.0.${n}:2552`,
  uid: `u${n}`,
  name: `n${n}`,
  roles: [] as string[],
});

/** Member n's key (`memberKey`). */
export const key = (n: number) => nodeKey(node(n));

/** Member n's unique address. */
export const addr = (n: number): UniqueNodeAddress => nodeOf(node(n));

/** Member n's membership actor, as a join's `replyTo`. */
export const refOf = (n: number): ActorRef =>
  ({
    id: `${key(n)}/system/membership`,
    address: { cluster: 't', node: addr(n), path: '/system/membership' },
  }) as unknown as ActorRef;

/** Member n asking to join (its own address and membership actor), with `extra` overriding. */
export const joinFrom = (n: number, extra: Partial<Join> = {}): Join => ({
  type: 'membership.join',
  node: addr(n),
  name: `n${n}`,
  roles: [],
  replyTo: refOf(n),
  ...extra,
});

/** A membership of members 1..count, all up, formed by 1 and grown one join at a time. */
export function grown(count: number): Membership {
  let m = formCluster(node(1));
  for (let i = 2; i <= count; i++) m = setStatus(addJoiner(m, node(i)).membership, [key(i)], 'up');
  return m;
}

/** The protocol's environment as member n sees it (default config, seeds irrelevant). */
export function envOf(n: number): Env {
  const [host, port] = node(n).address.split(':');
  return {
    self: { ...node(n), key: key(n), node: { host: host!, port: Number(port), uid: node(n).uid } },
    config: resolveClusterConfig({ seeds: [{ host: '10.0.0.1', port: 2552 }] }),
    selfRef: {} as ActorRef,
  };
}

/** A member's protocol context holding `membership` and nothing else. */
export const contextWith = (membership: Membership): MembershipContext => ({ ...initialContext, membership });

/** The messages a membership step sends (its `send` effects), in order. */
export const sends = (step: MembershipStep): Outbound[] =>
  step.effects.filter((e): e is Outbound => e.kind === 'send');
