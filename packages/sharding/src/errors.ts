import { DoyenError } from '@doyen/core';

/** `ref` or a send named an entity type this node never registered. */
export class UnknownEntityTypeError extends DoyenError {
  constructor(readonly entityType: string) {
    super(
      `no entity type ${JSON.stringify(entityType.slice(0, 100))} is registered on this node (register it in setup on every node)`,
      'sharding-unknown-entity-type',
    );
  }
}

/** An entity id that is empty or longer than the limit (in UTF-8 bytes). */
export class InvalidEntityIdError extends DoyenError {
  constructor(
    readonly entityType: string,
    readonly problem: string,
  ) {
    super(`entity id for ${entityType} refused: ${problem}`, 'sharding-invalid-entity-id');
  }
}

/** A message whose type the entity type did not list in `messages`. */
export class UnregisteredEntityMessageError extends DoyenError {
  constructor(
    readonly entityType: string,
    readonly messageType: string,
  ) {
    super(
      `message type ${JSON.stringify(messageType.slice(0, 100))} is not registered for entity type ${entityType} (options.messages)`,
      'sharding-unregistered-message',
    );
  }
}

/** The same entity type registered twice on one node. */
export class EntityTypeTakenError extends DoyenError {
  constructor(readonly entityType: string) {
    super(`entity type ${entityType} is already registered on this node`, 'sharding-entity-type-taken');
  }
}

/** A type name the wire could not carry (empty, too long, odd characters). */
export class InvalidEntityTypeNameError extends DoyenError {
  constructor(readonly entityType: string) {
    super(
      `entity type name ${JSON.stringify(entityType.slice(0, 100))} must be 1 to 64 of A-Z a-z 0-9 _ . -`,
      'sharding-invalid-entity-type-name',
    );
  }
}
