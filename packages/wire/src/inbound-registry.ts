import { type Lane, nodeKey, type UniqueNodeAddress } from '@doyen/core';

/** What the registry needs of an authenticated inbound connection. */
export interface RegisteredConnection {
  readonly lane: Lane | undefined;
  readonly authenticatedAs: UniqueNodeAddress | undefined;
}

export type Admitted<C> =
  /**
   * Taken; `replaced` are the identity's older connections on that lane, to be closed, and
   * `evicted` a non-member's connection that made room for a member's at the cap.
   */
  | { readonly ok: true; readonly replaced: readonly C[]; readonly evicted: readonly C[] }
  /** Refused: the node holds `maxInboundConnections` already. */
  | { readonly ok: false };

/**
 * The authenticated inbound connections of a node, by identity (`host:port#uid`) and lane, with
 * two caps: in all, and per identity and lane. A connection over its identity's cap replaces
 * the identity's oldest rather than being refused: a peer that reconnects after a network blip
 * may leave its old socket half-open here, and must not be locked out by its own ghost. At the
 * cap in all, a current member's connection takes the place of a non-member's (the oldest), so
 * secret holders filling the node cannot keep the cluster's own members out.
 */
export class InboundRegistry<C extends RegisteredConnection> {
  /** `lane|host:port#uid` -> its connections, oldest first. */
  private readonly byIdentity = new Map<string, C[]>();
  /** `host:port#uid` -> its connections on every lane. */
  private readonly perNode = new Map<string, number>();
  private total = 0;
  /** Every registered connection, oldest first (the eviction order). */
  private readonly all = new Set<C>();

  constructor(
    private readonly maxTotal: number,
    private readonly maxPerIdentity: number,
  ) {}

  get size(): number {
    return this.total;
  }

  /** Whether a node incarnation has a registered connection on any lane. */
  isConnected(node: UniqueNodeAddress): boolean {
    return this.perNode.has(nodeKey(node));
  }

  /** Connections of one identity on one lane (for tests and metrics). */
  countOf(node: UniqueNodeAddress, lane: Lane): number {
    return this.byIdentity.get(`${lane}|${nodeKey(node)}`)?.length ?? 0;
  }

  /** `isMember` tells a current member's connection (it may evict a non-member's at the cap). */
  admit(connection: C, isMember: (c: C) => boolean): Admitted<C> {
    const node = connection.authenticatedAs!;
    const key = `${connection.lane}|${nodeKey(node)}`;
    const own = this.byIdentity.get(key) ?? [];
    // the identity's oldest connections make room first: they do not count against the total
    const excess = Math.max(0, own.length + 1 - this.maxPerIdentity);
    let evicted: C | undefined;
    if (this.total - excess >= this.maxTotal) {
      if (isMember(connection))
        for (const c of this.all)
          if (!isMember(c)) {
            evicted = c;
            break;
          }
      if (evicted === undefined) return { ok: false };
      this.remove(evicted);
    }
    const replaced = own.splice(0, excess);
    for (const old of replaced) this.forgetCounted(old);
    own.push(connection);
    this.byIdentity.set(key, own);
    this.all.add(connection);
    this.total++;
    this.perNode.set(nodeKey(node), (this.perNode.get(nodeKey(node)) ?? 0) + 1);
    return { ok: true, replaced, evicted: evicted ? [evicted] : [] };
  }

  /**
   * Forgets a connection (it closed); true when it was its node incarnation's last one on any
   * lane. A connection not registered (refused, replaced already) changes nothing.
   */
  remove(connection: C): boolean {
    const node = connection.authenticatedAs;
    if (!node) return false;
    const key = `${connection.lane}|${nodeKey(node)}`;
    const own = this.byIdentity.get(key);
    const at = own?.indexOf(connection) ?? -1;
    if (!own || at < 0) return false;
    own.splice(at, 1);
    if (own.length === 0) this.byIdentity.delete(key);
    return this.forgetCounted(connection);
  }

  private forgetCounted(connection: C): boolean {
    this.all.delete(connection);
    const nk = nodeKey(connection.authenticatedAs!);
    this.total--;
    const left = (this.perNode.get(nk) ?? 1) - 1;
    if (left > 0) this.perNode.set(nk, left);
    else this.perNode.delete(nk);
    return left === 0;
  }
}
