import type { UniqueNodeAddress } from './address.js';

/**
 * Node identity keys: a member incarnation (`host:port#uid`) -> the public key the coordinator
 * admitted with it. The cluster fills this from every membership it adopts; the transport
 * consults it at every handshake, so a connection that claims a member must sign with that
 * member's key. An incarnation never changes its key: the first one recorded stays.
 */

/** The node incarnation a connection authenticated as, with the identity key it proved. */
export interface AuthenticatedNode extends UniqueNodeAddress {
  readonly publicKey?: string;
}

/** A raw Ed25519 public key as base64url: 32 bytes, 43 characters, no padding. */
const PUBLIC_KEY_TEXT = /^[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]$/;

export function isPublicKeyText(value: unknown): value is string {
  return typeof value === 'string' && PUBLIC_KEY_TEXT.test(value);
}

/** Most incarnations remembered: members and the failed list are each capped well below. */
const MAX_KEYS = 50_000;

export class PeerKeys {
  private readonly keys = new Map<string, string>();
  private readonly listeners = new Set<(member: string, publicKey: string) => void>();

  /** The public key admitted for `member` (`host:port#uid`), if any. */
  get(member: string): string | undefined {
    return this.keys.get(member);
  }

  get size(): number {
    return this.keys.size;
  }

  /**
   * Records the keys of these incarnations (members without a key are skipped: a cluster
   * without identity keys, the simulation). A key already recorded is never replaced, and the
   * oldest entries go first beyond the cap.
   */
  record(entries: Iterable<{ readonly member: string; readonly publicKey: string | undefined }>): void {
    for (const { member, publicKey } of entries) {
      if (publicKey === undefined || this.keys.has(member)) continue;
      if (this.keys.size >= MAX_KEYS) this.keys.delete(this.keys.keys().next().value as string);
      this.keys.set(member, publicKey);
      for (const l of this.listeners) l(member, publicKey);
    }
  }

  /** Called with every newly recorded key (the transport closes connections that contradict it). */
  onRecorded(listener: (member: string, publicKey: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
