import { type MessageTypes, nodeKey } from '@doyen/core';
import { coordinatorOf, type Membership } from '../model/membership.js';

/**
 * Installs the authorities this node's membership view answers, checked at the wire boundary
 * for every message from the network (see `Authority` in `@doyen/core`):
 * - `member`: the origin is a member of the view, in any status (the protocol judges liveness);
 *   while the node has no view yet (it is joining) anyone is, since its welcome, or an update
 *   naming it, comes from a node it does not know yet and the protocol believes only its admitter;
 * - `coordinator`: the origin is the coordinator of the view (no one while there is none).
 * `view` is read per message: it must be the node's current membership, kept by the cluster.
 * Returns the uninstaller.
 */
export function installMembershipAuthority(
  types: MessageTypes,
  view: () => Membership | undefined,
): () => void {
  // one set per membership value (views are immutable): a lookup per message, not a scan
  let indexed: Membership | undefined;
  let keys = new Set<string>();
  const membersOf = (m: Membership): ReadonlySet<string> => {
    if (m !== indexed) {
      keys = new Set(m.members.map(nodeKey));
      indexed = m;
    }
    return keys;
  };
  const uninstallMember = types.defineAuthority('member', (origin) => {
    const m = view();
    return m === undefined || membersOf(m).has(origin);
  });
  const uninstallCoordinator = types.defineAuthority('coordinator', (origin) => {
    const m = view();
    const c = m && coordinatorOf(m);
    return c !== undefined && nodeKey(c) === origin;
  });
  return () => {
    uninstallMember();
    uninstallCoordinator();
  };
}
