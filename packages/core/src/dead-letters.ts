import type { Logger } from 'pino';
import type { Clock } from './clock.js';
import { RateLimitedLog } from './logger.js';
import type { Message } from './message.js';
import type { Metrics } from './metrics.js';

export type DeadLetterReason =
  | 'no-such-actor'
  | 'actor-stopped'
  | 'mailbox-full'
  | 'mailbox-overflow-dropped-oldest'
  | 'wrong-incarnation'
  | 'no-transport'
  | 'outbound-queue-full'
  | 'message-too-large'
  | 'unencodable'
  | 'ask-reply-after-timeout'
  | 'node-gone'
  | 'system-terminated';

export interface DeadLetter {
  readonly recipient: string;
  readonly sender?: string;
  readonly message: Message;
  readonly reason: DeadLetterReason;
}

/** Undeliverable messages end here: counted per reason, logged (rate limited), observable. */
export class DeadLetters {
  private readonly listeners = new Set<(letter: DeadLetter) => void>();
  private readonly log: RateLimitedLog;
  count = 0;

  constructor(
    logger: Logger,
    clock: Clock,
    private readonly metrics: Metrics,
  ) {
    this.log = new RateLimitedLog(logger, () => clock.now(), 10);
  }

  publish(letter: DeadLetter): void {
    this.count++;
    this.metrics.inc('doyen_dead_letters_total', 'Messages that could not be delivered', {
      reason: letter.reason,
    });
    this.log.warn(
      'dead-letter',
      {
        event: 'dead-letter',
        recipient: letter.recipient,
        sender: letter.sender,
        messageType: letter.message.type,
        reason: letter.reason,
      },
      `dead letter to ${letter.recipient}: ${letter.reason}`,
    );
    for (const listener of this.listeners) listener(letter);
  }

  subscribe(listener: (letter: DeadLetter) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
