import { type Cluster, type Member, nodeOf } from '@doyen/cluster';
import {
  ActorRef,
  type ActorSystem,
  ANY_INCARNATION,
  DoyenError,
  formatNodeAddress,
  InvalidAddressError,
  type Message,
  parseActorLocation,
  type RefHost,
  sameNode,
} from '@doyen/core';

export class NoMemberAtAddressError extends DoyenError {
  constructor(readonly target: string) {
    super(`no member runs at the address of ${target} now`, 'no-member-at-address');
  }
}

/** Where the node's current incarnation is: read at every send. */
export interface CurrentIncarnation {
  readonly system: ActorSystem;
  readonly cluster: Cluster;
}

/**
 * A ref to a path on whichever incarnation of a node is a member now: resolved from this
 * node's membership at each send, so it follows the target's restarts (and this node's own).
 * Send to it; do not put it in a message (a message carries refs with their uid).
 */
export class MemberPathRef<M extends Message = Message> extends ActorRef<M> {
  readonly isLocal = false;
}

/** The newest incarnation at `address` that is still a member (a restarted node's old one may linger). */
function memberAt(cluster: Cluster, address: string): Member | undefined {
  let found: Member | undefined;
  for (const m of cluster.state().membership?.members ?? [])
    if (m.address === address && (found === undefined || m.age > found.age)) found = m;
  return found;
}

/**
 * A ref from an actor address. With `#uid` it is that incarnation's ref (`system.refFor`);
 * without, a MemberPathRef: messages go to the member at host:port at send time, or become dead
 * letters (`no-member-at-address`) while none is there; an ask then fails with
 * NoMemberAtAddressError.
 */
export function refForPath<M extends Message = Message>(
  node: CurrentIncarnation,
  address: string,
): ActorRef<M> {
  const location = parseActorLocation(address);
  if (location.uid !== undefined) return node.system.refFor<M>(address);
  if (location.cluster !== node.system.cluster)
    throw new InvalidAddressError(
      address,
      `names cluster ${location.cluster}; this node is in ${node.system.cluster}`,
    );
  const hostPort = formatNodeAddress(location.node);
  const resolve = (): ActorRef | undefined => {
    const system = node.system;
    if (sameNode(location.node, system.node)) return system.remoteRef(system.node, location.path);
    const member = memberAt(node.cluster, hostPort);
    return member && system.remoteRef(nodeOf(member), location.path);
  };
  const host: RefHost = {
    deliver(ref, message, sender) {
      const target = resolve();
      if (target) target.send(message, sender);
      else node.system.deadLetter(ref.id, message, sender?.id, 'no-member-at-address');
    },
    ask(ref, build, options) {
      const target = resolve();
      return target ? target.ask(build, options) : Promise.reject(new NoMemberAtAddressError(ref.id));
    },
  };
  return new MemberPathRef<M>(
    host,
    { cluster: location.cluster, node: { ...location.node, uid: ANY_INCARNATION }, path: location.path },
    address,
  );
}
