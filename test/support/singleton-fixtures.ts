import type { Member, Membership } from '../../packages/cluster/src/index.js';
import {
  type ActorRef,
  type ActorSystem,
  nodeKey,
  type UniqueNodeAddress,
} from '../../packages/core/src/index.js';

/** The singleton machine tests' members, membership events and a system that only names refs. */
export const member = (n: UniqueNodeAddress, age: number, status: Member['status'] = 'up'): Member => ({
  address: `${n.host}:${n.port}`,
  uid: n.uid,
  name: n.host,
  age,
  status,
  roles: [],
});

/** `singleton.membership` events whose versions rise with each one made. */
export function membershipEvents() {
  let version = 0;
  return (members: Member[], failed: Member[] = [], unreachable: string[] = []) =>
    ({
      type: 'singleton.membership',
      membership: { version: ++version, nextAge: 10, members, failed, unreachable } as Membership,
    }) as const;
}

/** Refs that only carry an address: the machines send through their effects, never through them here. */
export const refTo = (n: UniqueNodeAddress, path: string): ActorRef =>
  ({
    id: `${nodeKey(n)}${path}`,
    address: { cluster: 't', node: n, path },
    send() {},
  }) as unknown as ActorRef;

/** An actor system at `self` that logs nothing and makes address-only refs. */
export const stubSystem = (self: UniqueNodeAddress) =>
  ({
    node: self,
    nodeName: `${self.host}:${self.port}`,
    logger: { info() {}, warn() {}, debug() {}, error() {} },
    remoteRef: (n: UniqueNodeAddress, path: string) => refTo(n, path),
    deadLetter() {},
  }) as unknown as ActorSystem;
