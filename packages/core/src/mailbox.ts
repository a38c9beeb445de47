import { ChunkedQueue } from './chunked-queue.js';
import { InvalidConfigError } from './errors.js';
import type { Message } from './message.js';

export type OverflowPolicy = 'drop-newest' | 'drop-oldest' | 'reject';

export interface MailboxConfig {
  /**
   * Most messages waiting at once; `Infinity` (the default) for an unbounded mailbox, which
   * never drops: a burst is queued and processed, and the high-water mark warns about it.
   */
  readonly capacity: number;
  /** What happens to a message arriving at a full mailbox (bounded mailboxes only). */
  readonly overflow: OverflowPolicy;
  /**
   * Depth at which the system warns (rate-limited log line with the actor path, and a counter)
   * each time the queue grows through it: a backlog is building. `Infinity` turns it off.
   */
  readonly highWaterMark?: number;
}

/**
 * Unbounded, like Akka's default and other TypeScript actor libraries': a burst of local tells
 * is processed, never dropped silently. Memory is the bound; the high-water warning and the
 * `doyen_mailbox_depth` gauge make a growing backlog visible long before it matters. A user who
 * wants a hard bound asks for a capacity and an overflow policy, and every drop is then logged
 * with the actor path and counted.
 */
export const defaultMailboxConfig: Required<MailboxConfig> = {
  capacity: Number.POSITIVE_INFINITY,
  overflow: 'drop-newest',
  highWaterMark: 10_000,
};

export interface Delivery {
  readonly message: Message;
  /** Address of the sending actor, when known (used for rejections and dead letters). */
  readonly sender: string | undefined;
}

export type OfferResult =
  | {
      readonly accepted: true;
      readonly evicted?: Delivery;
      /** Set on the offer that brought the queue up to the high-water mark. */
      readonly highWater?: true;
    }
  | { readonly accepted: false; readonly policy: OverflowPolicy };

/** A message that came with a sender; messages without one are queued bare (no allocation). */
class WithSender {
  constructor(
    readonly message: Message,
    readonly sender: string,
  ) {}
}

/** The result of nearly every offer: the senders' hot path compares against it first. */
export const ACCEPTED: OfferResult = { accepted: true };
const ACCEPTED_AT_HIGH_WATER: OfferResult = { accepted: true, highWater: true };
/** One rejection per policy for every mailbox, rather than one object per mailbox (per-actor memory). */
const REJECTED: Record<OverflowPolicy, OfferResult> = {
  'drop-newest': { accepted: false, policy: 'drop-newest' },
  'drop-oldest': { accepted: false, policy: 'drop-oldest' },
  reject: { accepted: false, policy: 'reject' },
};

/** A FIFO of deliveries for one actor, unbounded or bounded. Overflow never blocks: it drops or rejects. */
export class Mailbox {
  private readonly queue = new ChunkedQueue<Message | WithSender>();
  private readonly capacity: number;
  /** The depth reached by the offer that crosses the mark (queue length before the push). */
  private readonly highWaterBefore: number;
  /** Queued items that carry a sender: while none do, taking a message needs no type check. */
  private withSender = 0;

  constructor(readonly config: MailboxConfig) {
    const { capacity, highWaterMark } = config;
    if (capacity !== Number.POSITIVE_INFINITY && (!Number.isInteger(capacity) || capacity < 1)) {
      throw new InvalidConfigError(
        `mailbox capacity must be a positive integer or Infinity (unbounded), got ${capacity}`,
      );
    }
    const mark = highWaterMark ?? defaultMailboxConfig.highWaterMark;
    if (mark !== Number.POSITIVE_INFINITY && (!Number.isInteger(mark) || mark < 1)) {
      throw new InvalidConfigError(
        `mailbox highWaterMark must be a positive integer or Infinity (off), got ${mark}`,
      );
    }
    this.capacity = capacity;
    this.highWaterBefore = mark - 1;
  }

  get size(): number {
    return this.queue.length;
  }

  get bounded(): boolean {
    return this.capacity !== Number.POSITIVE_INFINITY;
  }

  offer(delivery: Delivery): OfferResult {
    return this.offerMessage(delivery.message, delivery.sender);
  }

  offerMessage(message: Message, sender: string | undefined): OfferResult {
    const item = sender === undefined ? message : new WithSender(message, sender);
    const length = this.queue.length;
    if (length < this.capacity) {
      this.queue.push(item);
      // counted once queued (a refused message never is)
      if (sender !== undefined) this.withSender++;
      return length === this.highWaterBefore ? ACCEPTED_AT_HIGH_WATER : ACCEPTED;
    }
    return this.overflow(item, sender);
  }

  /** A full bounded mailbox: out of the offer's hot path. */
  private overflow(item: Message | WithSender, sender: string | undefined): OfferResult {
    if (this.config.overflow === 'drop-oldest') {
      const evicted = this.take()!;
      this.queue.push(item);
      if (sender !== undefined) this.withSender++;
      return { accepted: true, evicted };
    }
    return REJECTED[this.config.overflow];
  }

  take(): Delivery | undefined {
    const item = this.queue.shift();
    if (item === undefined) return undefined;
    if (item instanceof WithSender) {
      this.withSender--;
      return { message: item.message, sender: item.sender };
    }
    return { message: item, sender: undefined };
  }

  /** The next message alone: the hot path of the dispatcher. */
  takeMessage(): Message | undefined {
    const item = this.queue.shift();
    if (this.withSender === 0 || !(item instanceof WithSender)) return item as Message | undefined;
    this.withSender--;
    return item.message;
  }

  drain(): Delivery[] {
    const out: Delivery[] = [];
    for (let d = this.take(); d !== undefined; d = this.take()) out.push(d);
    return out;
  }
}
