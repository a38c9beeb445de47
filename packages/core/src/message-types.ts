import { DoyenError } from './errors.js';
import type { Message } from './message.js';

/** Checks one decoded message; returns a reason when it is malformed. */
export type MessageValidator = (message: Message) => string | undefined;

export class UnknownMessageTypeError extends DoyenError {
  constructor(readonly messageType: string) {
    super(`message type ${JSON.stringify(messageType)} is not registered`, 'unknown-message-type');
  }
}

/**
 * The message types this node accepts from the network (like Akka's serialization bindings):
 * anything else is dropped at the boundary before it reaches an actor.
 */
export class MessageTypes {
  private readonly validators = new Map<string, MessageValidator | undefined>();

  register(types: string | readonly string[], validate?: MessageValidator): this {
    for (const type of typeof types === 'string' ? [types] : types) this.validators.set(type, validate);
    return this;
  }

  has(type: string): boolean {
    return this.validators.has(type);
  }

  /** `undefined` when acceptable, otherwise the reason it is not. */
  check(message: Message): string | undefined {
    if (!this.validators.has(message.type)) return `unknown message type ${JSON.stringify(message.type)}`;
    const validate = this.validators.get(message.type);
    if (!validate) return undefined;
    try {
      return validate(message);
    } catch (error) {
      return `validator threw: ${(error as Error).message}`;
    }
  }
}
