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

/** A bounded FIFO of deliveries for one actor. Overflow never blocks: it drops or rejects. */
export class Mailbox {
  private readonly queue = new RingBuffer<Delivery>(8);

  constructor(readonly config: MailboxConfig) {
    if (!Number.isInteger(config.capacity) || config.capacity < 1) {
      throw new InvalidConfigError(`mailbox capacity must be a positive integer, got ${config.capacity}`);
    }
  }

  get size(): number {
    return this.queue.length;
  }

  offer(delivery: Delivery): OfferResult {
    if (this.queue.length < this.config.capacity) {
      this.queue.push(delivery);
      return { accepted: true };
    }
    if (this.config.overflow === 'drop-oldest') {
      const evicted = this.queue.shift()!;
      this.queue.push(delivery);
      return { accepted: true, evicted };
    }
    return { accepted: false, policy: this.config.overflow };
  }

  take(): Delivery | undefined {
    return this.queue.shift();
  }

  drain(): Delivery[] {
    return this.queue.drain();
  }
}
