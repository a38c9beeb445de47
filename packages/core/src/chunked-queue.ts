/** The first chunk is small (most mailboxes hold a few messages); each next one doubles up to MAX_CHUNK. */
const FIRST_CHUNK = 16;
/** Big enough that chunk hops are rare, small enough to stay out of V8's large-object space. */
const MAX_CHUNK = 4096;
/** Emptied first chunks kept for the next queue that needs one (a bound: ~220 KB at most). */
const POOL_MAX = 1024;

interface Chunk<T> {
  readonly items: (T | undefined)[];
  next: Chunk<T> | undefined;
}

/**
 * An unbounded FIFO as a linked list of fixed-size chunks: a burst of a million messages costs no
 * copying as it grows (a ring buffer doubles and copies everything, ~20 times on the way to 1M),
 * and one emptied chunk is kept for reuse so a queue that hovers around a chunk boundary allocates
 * nothing. A queue that empties gives its first chunk back (see `emptied`).
 */
export class ChunkedQueue<T> {
  // An empty queue that never held anything shares one chunk with every other such queue: a
  // million idle actors' mailboxes allocate nothing (per-actor memory). The first push replaces it.
  private head: Chunk<T> = NO_CHUNK as Chunk<T>;
  private tail: Chunk<T> = this.head;
  /** Next read index in `head`, next write index in `tail`. */
  private readAt = 0;
  private writeAt = 0;
  private count = 0;
  private spare: Chunk<T> | undefined;

  get length(): number {
    return this.count;
  }

  push(item: T): void {
    if (this.writeAt === this.tail.items.length || this.tail === NO_CHUNK) this.addChunk();
    this.tail.items[this.writeAt++] = item;
    this.count++;
  }

  /** A first chunk, or the next one when the tail is full: out of line, so `push` stays small. */
  private addChunk(): void {
    if (this.tail === NO_CHUNK) {
      this.head = this.tail = (POOL.pop() as Chunk<T> | undefined) ?? chunk<T>(FIRST_CHUNK);
      return;
    }
    const size = Math.min(this.tail.items.length * 2, MAX_CHUNK);
    const fresh = this.spare !== undefined && this.spare.items.length >= size ? this.spare : chunk<T>(size);
    this.spare = undefined;
    this.tail.next = fresh;
    this.tail = fresh;
    this.writeAt = 0;
  }

  shift(): T | undefined {
    if (this.count === 0) return undefined;
    if (this.readAt === this.head.items.length) this.nextChunk();
    const items = this.head.items;
    const item = items[this.readAt];
    items[this.readAt++] = undefined;
    if (--this.count === 0) this.emptied();
    return item;
  }

  /**
   * Empty again: a queue that drained holds no first-size chunk (a million actors that each
   * handled a message keep ~200 bytes less each, and a scavenge has that much less to copy per
   * fresh entity). The chunk goes to the pool while it has room, for the next queue to fill, so a
   * queue that keeps emptying allocates nothing. A bigger chunk is kept, to start over at its front.
   */
  private emptied(): void {
    const head = this.head;
    head.next = undefined;
    this.readAt = 0;
    this.writeAt = 0;
    if (head.items.length === FIRST_CHUNK) {
      // every slot is undefined again: shift clears what it reads, and the rest was never written
      if (POOL.length < POOL_MAX) POOL.push(head as Chunk<unknown>);
      this.head = this.tail = NO_CHUNK as Chunk<T>;
    } else {
      this.tail = head;
    }
  }

  /** The head chunk is read to its end: move to the next, keeping the done one as the spare. */
  private nextChunk(): void {
    const done = this.head;
    this.head = done.next!;
    done.next = undefined;
    this.spare = done;
    this.readAt = 0;
  }

  /** Removes and returns everything, oldest first. */
  drain(): T[] {
    const out: T[] = [];
    while (this.count > 0) out.push(this.shift()!);
    return out;
  }
}

function chunk<T>(size: number): Chunk<T> {
  return { items: new Array<T | undefined>(size).fill(undefined), next: undefined };
}

/**
 * The shared chunk of never-used queues, never written or read (push replaces it first; shift and
 * drain stop at a count of 0). Made like every chunk, not frozen: the same hidden class keeps the
 * queue's hot paths monomorphic.
 */
const NO_CHUNK: Chunk<never> = chunk<never>(1);
/** First chunks that queues gave back on emptying, shared by every queue (see `emptied`). */
const POOL: Chunk<unknown>[] = [];
