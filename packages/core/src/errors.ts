/** Base of every error doyen throws, so callers can tell ours from theirs with one `instanceof`. */
export class DoyenError extends Error {
  constructor(
    message: string,
    /** Stable machine-readable code, e.g. `ask-timeout`. */
    readonly code: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

export class AskTimeoutError extends DoyenError {
  constructor(
    readonly target: string,
    readonly timeoutMs: number,
  ) {
    super(`ask to ${target} got no reply within ${timeoutMs} ms`, 'ask-timeout');
  }
}

export class MailboxFullError extends DoyenError {
  constructor(
    readonly target: string,
    readonly capacity: number,
  ) {
    super(`mailbox of ${target} is full (capacity ${capacity}); message rejected`, 'mailbox-full');
  }
}

/** An ask refused at once: this node already waits for `cap` replies from the target's node. */
export class TooManyPendingAsksError extends DoyenError {
  constructor(
    readonly target: string,
    readonly cap: number,
  ) {
    super(
      `ask to ${target} refused: ${cap} asks to its node are already waiting for replies (limits.maxPendingAsksPerNode)`,
      'too-many-pending-asks',
    );
  }
}

/** An ask failed before its timeout: the target's node was removed from the cluster. */
export class AskTargetGoneError extends DoyenError {
  constructor(readonly target: string) {
    super(`ask to ${target} failed: its node was removed from the cluster`, 'ask-target-gone');
  }
}

export class ActorNameTakenError extends DoyenError {
  constructor(readonly path: string) {
    super(`an actor already runs at ${path}`, 'name-taken');
  }
}

export class InvalidActorNameError extends DoyenError {
  constructor(readonly actorName: string) {
    super(
      `invalid actor name ${JSON.stringify(actorName)}: use letters, digits and - _ . (1-64 characters)`,
      'invalid-name',
    );
  }
}

export class InvalidAddressError extends DoyenError {
  constructor(
    readonly input: string,
    reason: string,
  ) {
    super(`invalid actor address ${JSON.stringify(input)}: ${reason}`, 'invalid-address');
  }
}

export class ActorSystemTerminatedError extends DoyenError {
  constructor(what: string) {
    super(`actor system is terminated: cannot ${what}`, 'system-terminated');
  }
}

export class InvalidConfigError extends DoyenError {
  constructor(message: string) {
    super(message, 'invalid-config');
  }
}

/** Turns anything thrown into an Error so logs always have a message and a stack. */
export function toError(thrown: unknown): Error {
  if (thrown instanceof Error) return thrown;
  return new Error(typeof thrown === 'string' ? thrown : JSON.stringify(thrown));
}
