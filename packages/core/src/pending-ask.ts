import type { ActorRef } from './actor-ref.js';
import type { Expiring } from './ask-deadlines.js';
import { ActorSystemTerminatedError, AskTimeoutError, MailboxFullError } from './errors.js';
import type { Message } from './message.js';
import type { DoyenSpan } from './tracing.js';

/** What a pending ask needs from its system. */
export interface AskHost {
  /** The ask's temporary ref stops answering; its deadline is told unless it is what expired. */
  settleAsk(ask: PendingAsk, expired: boolean): void;
  mailboxCapacityOf(ref: ActorRef): number;
}

/**
 * One ask waiting for its reply: the handler of its temporary ref and the item its deadline
 * expires. One object per ask (no closures, no timer): asks are a hot path.
 */
export class PendingAsk implements Expiring {
  settled = false;
  /** The ask's client span, when OpenTelemetry traces. */
  span: DoyenSpan | undefined;
  /** The key of the remote node asked (its pending asks are capped), undefined for a local target. */
  peer: string | undefined;

  constructor(
    private readonly host: AskHost,
    readonly path: string,
    private readonly target: ActorRef,
    readonly timeout: number,
    private readonly resolve: (reply: Message) => void,
    private readonly reject: (error: unknown) => void,
    /** When the ask was made (the system's clock), for `doyen_ask_duration_seconds`. */
    readonly startedAt: number,
  ) {}

  /** The address of the asked actor (for errors). */
  get targetId(): string {
    return this.target.id;
  }

  /** The reply (or a rejection from a full mailbox) arrived at the temporary ref. */
  handler(message: Message): void {
    if (this.settled) return;
    this.settle();
    if (message.type === 'doyen.rejected')
      this.reject(new MailboxFullError(this.target.id, this.host.mailboxCapacityOf(this.target)));
    else this.resolve(message);
  }

  onTerminate(): void {
    this.fail(new ActorSystemTerminatedError('wait for the reply'));
  }

  fail(error: unknown): void {
    if (this.settled) return;
    this.settle();
    this.reject(error);
  }

  /** The deadline passed (called by AskDeadlines, which has already counted it). */
  expire(): void {
    if (this.settled) return;
    this.settled = true;
    this.host.settleAsk(this, true);
    this.reject(new AskTimeoutError(this.target.id, this.timeout));
  }

  private settle(): void {
    this.settled = true;
    this.host.settleAsk(this, false);
  }
}
