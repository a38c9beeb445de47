import { DoyenError, type Message } from '@doyen/core';

/** What a service key may be called: it travels in every listing, so it is short and plain. */
export const SERVICE_KEY_ID = /^[A-Za-z0-9_.:-]{1,128}$/;

export function isServiceKeyId(id: string): boolean {
  return SERVICE_KEY_ID.test(id);
}

export class InvalidServiceKeyError extends DoyenError {
  constructor(readonly id: string) {
    super(
      `invalid service key ${JSON.stringify(id)}: 1 to 128 letters, digits, '_', '.', ':' or '-'`,
      'invalid-service-key',
    );
  }
}

/**
 * Names a service in the receptionist (Akka's `ServiceKey[T]`): the refs registered under it
 * accept messages of type `M`. Two keys with the same id name the same service; the type is the
 * caller's promise, checked only by the compiler (the wire validates each message on arrival).
 */
export class ServiceKey<M extends Message = Message> {
  /** Carries `M` for the compiler only. */
  declare readonly messageType?: M;

  constructor(readonly id: string) {
    if (!isServiceKeyId(id)) throw new InvalidServiceKeyError(id);
  }

  toString(): string {
    return `ServiceKey(${this.id})`;
  }
}
