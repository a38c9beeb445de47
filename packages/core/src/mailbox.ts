import { InvalidConfigError } from './errors.js';
import type { Message } from './message.js';
import { RingBuffer } from './ring-buffer.js';

export type OverflowPolicy = 'drop-newest' | 'drop-oldest' | 'reject';

export interface MailboxConfig {
  /** Most messages waiting at once. */
  readonly capacity: number;
  /** What happens to a message arriving at a full mailbox. */
  readonly overflow: OverflowPolicy;
}

export const defaultMailboxConfig: MailboxConfig = { capacity: 100_000, overflow: 'drop-newest' };

export interface Delivery {
  readonly message: Message;
  /** Address of the sending actor, when known (used for rejections and dead letters). */
  readonly sender: string | undefined;
}

export type OfferResult =
  | { readonly accepted: true; readonly evicted?: Delivery }
  | { readonly accepted: false; readonly policy: OverflowPolicy };

/** A message that came with a sender; messages without one are queued bare (no allocation). */
class WithSender {
  constructor(
    readonly message: Message,
    readonly sender: string,
  ) {}
}

const ACCEPTED: OfferResult = { accepted: true };

/** A bounded FIFO of deliveries for one actor. Overflow never blocks: it drops or rejects. */
export class Mailbox {
  private readonly queue = new RingBuffer<Message | WithSender>(8);
  private readonly rejected: OfferResult;

  constructor(readonly config: MailboxConfig) {
    if (!Number.isInteger(config.capacity) || config.capacity < 1) {
      throw new InvalidConfigError(`mailbox capacity must be a positive integer, got ${config.capacity}`);
    }
    this.rejected = { accepted: false, policy: config.overflow };
  }

  get size(): number {
    return this.queue.length;
  }

  offer(delivery: Delivery): OfferResult {
    return this.offerMessage(delivery.message, delivery.sender);
  }

  offerMessage(message: Message, sender: string | undefined): OfferResult {
    const item = sender === undefined ? message : new WithSender(message, sender);
    if (this.queue.length < this.config.capacity) {
      this.queue.push(item);
      return ACCEPTED;
    }
    if (this.config.overflow === 'drop-oldest') {
      const evicted = toDelivery(this.queue.shift()!);
      this.queue.push(item);
      return { accepted: true, evicted };
    }
    return this.rejected;
  }

  take(): Delivery | undefined {
    const item = this.queue.shift();
    return item === undefined ? undefined : toDelivery(item);
  }

  /** The next message alone: the hot path of the dispatcher. */
  takeMessage(): Message | undefined {
    const item = this.queue.shift();
    return item instanceof WithSender ? item.message : item;
  }

  drain(): Delivery[] {
    return this.queue.drain().map(toDelivery);
  }
}

function toDelivery(item: Message | WithSender): Delivery {
  return item instanceof WithSender
    ? { message: item.message, sender: item.sender }
    : { message: item, sender: undefined };
}
