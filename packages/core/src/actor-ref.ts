import type { ActorAddress } from './address.js';
import type { Message } from './message.js';

export interface AskOptions {
  /** Reject with `AskTimeoutError` when no reply arrives within this many ms (default 5000). */
  readonly timeout?: number;
}

/** What a ref needs from its actor system; keeps refs free of a hard dependency on the system class. */
export interface RefHost {
  deliver(ref: ActorRef, message: Message, sender: ActorRef | undefined): void;
  ask<R extends Message>(
    target: ActorRef,
    build: (replyTo: ActorRef<R>) => Message,
    options: AskOptions | undefined,
  ): Promise<R>;
}

/**
 * A handle to an actor, local or remote: the same calls work either way (location transparency).
 * Serialises to its address, `doyen://<cluster>@<host>:<port>/<path>#<node uid>`.
 */
export abstract class ActorRef<M extends Message = Message> {
  constructor(
    protected readonly host: RefHost,
    readonly address: ActorAddress,
    /** The full address string, computed once. */
    readonly id: string,
  ) {}

  get path(): string {
    return this.address.path;
  }

  abstract readonly isLocal: boolean;

  /** Fire-and-forget (tell). Never throws: undeliverable messages go to dead letters. */
  send(message: M, sender?: ActorRef): void {
    this.host.deliver(this, message, sender);
  }

  /** Request-response: `build` receives the temporary ref to reply to. */
  ask<R extends Message>(build: (replyTo: ActorRef<R>) => M, options?: AskOptions): Promise<R> {
    return this.host.ask(this, build as (replyTo: ActorRef<R>) => Message, options);
  }

  equals(other: ActorRef | undefined): boolean {
    return other !== undefined && other.id === this.id;
  }

  toString(): string {
    return this.id;
  }

  toJSON(): string {
    return this.id;
  }
}

/** A ref to an actor in this process. */
export class LocalActorRef<M extends Message = Message> extends ActorRef<M> {
  readonly isLocal = true;
}

/** A ref to an actor on another node; sends go through the transport. */
export class RemoteActorRef<M extends Message = Message> extends ActorRef<M> {
  readonly isLocal = false;
}
