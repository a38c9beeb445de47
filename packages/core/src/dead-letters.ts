import type { Logger } from 'pino';
import { parseActorLocation } from './address.js';
import type { Clock } from './clock.js';
import type { DeadLetterReason } from './dead-letter-reasons.js';
import { RateLimitedLog } from './logger.js';
import type { Message } from './message.js';
import type { Metrics } from './metrics.js';
import { laneOf } from './transport.js';

export interface DeadLetter {
  readonly recipient: string;
  readonly sender?: string;
  readonly message: Message;
  readonly reason: DeadLetterReason;
}

/**
 * How a dead letter is logged, as Akka does: an app's message that went nowhere at info; one
 * to a system actor (`/system/...`: heartbeats to a member that is gone, a join to a seed
 * that is not there) at debug, since the protocol that sent it reports what matters itself;
 * none once the node is shutting down, when undelivered messages are the expected end of
 * things (Akka's `log-dead-letters-during-shutdown = off`). Every letter is still counted.
 */
export function deadLetterLogLevel(letter: DeadLetter, shuttingDown: boolean): 'info' | 'debug' | undefined {
  if (shuttingDown) return undefined;
  return laneOf(recipientPath(letter.recipient)) === 'system' ? 'debug' : 'info';
}

/** The path of a recipient given as a path (the wire's envelopes) or as a full actor address. */
function recipientPath(recipient: string): string {
  if (recipient.startsWith('/')) return recipient;
  try {
    // with or without `#uid`: a path ref that follows a node's incarnations names no uid
    return parseActorLocation(recipient).path;
  } catch {
    return recipient;
  }
}

/** Undeliverable messages end here: counted per reason, logged (rate limited), observable. */
export class DeadLetters {
  private readonly listeners = new Set<(letter: DeadLetter) => void>();
  private readonly log: RateLimitedLog;
  private shuttingDown = false;
  count = 0;

  constructor(
    private readonly logger: Logger,
    clock: Clock,
    private readonly metrics: Metrics,
  ) {
    this.log = new RateLimitedLog(logger, () => clock.now(), 10);
  }

  /** The node is stopping: dead letters are counted and published, no longer logged. */
  shutdownStarted(): void {
    this.shuttingDown = true;
  }

  get isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  publish(letter: DeadLetter): void {
    this.count++;
    this.metrics.inc('doyen_dead_letters_total', 'Messages that could not be delivered', {
      reason: letter.reason,
    });
    const level = deadLetterLogLevel(letter, this.shuttingDown);
    if (level !== undefined && this.logger.isLevelEnabled(level)) {
      this.log.at(
        level,
        `dead-letter:${level}`,
        {
          event: 'dead-letter',
          recipient: letter.recipient,
          sender: letter.sender,
          messageType: letter.message.type,
          reason: letter.reason,
        },
        `dead letter to ${letter.recipient}: ${letter.reason}`,
      );
    }
    for (const listener of this.listeners) listener(letter);
  }

  subscribe(listener: (letter: DeadLetter) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
