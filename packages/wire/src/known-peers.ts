import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { type NodeAddress, nodeKey, type UniqueNodeAddress } from '@doyen/core';
import { quotaKeyOf } from './admission.js';

/**
 * Whom this node knows, as the cluster layer tells the transport (WsTransport.setKnownPeers):
 * the current members' incarnations and the addresses of seeds and discovered contacts. Their
 * source addresses may use the reserved handshake slots; a member's watches outlive a reconnect.
 * Host names are resolved in the background (until then, and if they fail, they count as unknown).
 */
export class KnownPeers {
  private members = new Set<string>();
  private sources = new Set<string>();
  private generation = 0;

  set(members: readonly UniqueNodeAddress[], contacts: readonly NodeAddress[]): void {
    const generation = ++this.generation;
    this.members = new Set(members.map((m) => nodeKey(m)));
    const sources = new Set<string>();
    const names: string[] = [];
    for (const { host } of [...members, ...contacts]) {
      const bare = host.startsWith('[') ? host.slice(1, -1) : host;
      if (isIP(bare) !== 0) sources.add(quotaKeyOf(bare));
      else names.push(bare);
    }
    this.sources = sources;
    for (const name of new Set(names)) {
      lookup(name, { all: true })
        .then((addresses) => {
          if (generation !== this.generation) return;
          for (const { address } of addresses) this.sources.add(quotaKeyOf(address));
        })
        .catch(() => {});
    }
  }

  isMember(node: UniqueNodeAddress): boolean {
    return this.members.has(nodeKey(node));
  }

  /** Whether a connection from this IP (as `quotaKeyOf` gives it) comes from a known peer. */
  isKnownSource(quotaKey: string): boolean {
    return this.sources.has(quotaKey);
  }
}
