// Who holds the management port's event streams. A fixed cap refusing newcomers let whoever came
// first keep the operator out (16 held streams: 503 for everyone after); here a newcomer is always
// served and the cap is kept by closing an older stream: the oldest of the newcomer's own client
// when that client is at its share, else the oldest of the client holding the most. Someone
// holding streams from one address can then take at most its share, and never the operator's
// fresh request, which closes one of theirs (or, from the same address, the oldest).

/** Why a stream was closed to make room. */
export type EvictionReason = 'client-cap' | 'total-cap';

export class EventStreamSlots<S> {
  /** Insertion order is age order: the first entry of a client is its oldest stream. */
  private readonly clients = new Map<S, string>();

  constructor(
    /** Streams served at once in all. */
    readonly max: number,
    /** Streams one client (a remote address) holds at once; at most `max`. */
    readonly maxPerClient: number,
  ) {
    if (!(max >= 1 && maxPerClient >= 1)) throw new RangeError('event stream caps must be >= 1');
  }

  get size(): number {
    return this.clients.size;
  }

  /** How many streams `client` holds. */
  heldBy(client: string): number {
    let n = 0;
    for (const c of this.clients.values()) if (c === client) n++;
    return n;
  }

  /**
   * Admits `stream` for `client`; returns the streams to close to keep both caps (already
   * released here), with why. The newcomer itself is never among them.
   */
  admit(client: string, stream: S): { stream: S; reason: EvictionReason }[] {
    const evicted: { stream: S; reason: EvictionReason }[] = [];
    while (this.heldBy(client) >= this.maxPerClient) {
      const oldest = this.oldestOf(client);
      if (oldest === undefined) break;
      this.clients.delete(oldest);
      evicted.push({ stream: oldest, reason: 'client-cap' });
    }
    while (this.clients.size >= this.max) {
      const oldest = this.oldestOf(this.heaviestClient());
      if (oldest === undefined) break;
      this.clients.delete(oldest);
      evicted.push({ stream: oldest, reason: 'total-cap' });
    }
    this.clients.set(stream, client);
    return evicted;
  }

  /** Forgets a stream that ended (idempotent). */
  release(stream: S): void {
    this.clients.delete(stream);
  }

  private oldestOf(client: string | undefined): S | undefined {
    for (const [stream, c] of this.clients) if (c === client) return stream;
    return undefined;
  }

  /** The client holding the most streams; of equals, the one whose oldest stream is oldest. */
  private heaviestClient(): string | undefined {
    const counts = new Map<string, number>();
    for (const c of this.clients.values()) counts.set(c, (counts.get(c) ?? 0) + 1);
    let best: string | undefined;
    for (const [c, n] of counts) if (best === undefined || n > counts.get(best)!) best = c;
    return best;
  }
}
