import type { SpawnOptions } from '@doyen/core';
import type { AnyActorLogic } from 'xstate';

/** Entity ids are hashed and carried in every envelope: bounded so one id cannot cost much. */
export const MAX_ENTITY_ID_BYTES = 256;

/** Entity type names travel in every envelope and label metrics: short and plain. */
export const ENTITY_TYPE_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

export interface EntityTypeOptions {
  /** Entities run only on members with this role; a node without it only routes (proxy-only). */
  readonly role?: string;
  /** Stop an entity after this long without a message (actor clock). Default: never. */
  readonly passivateAfterMs?: number;
  /** Per node: over this many active entities of this type, the least recently used is stopped. */
  readonly maxActiveEntities?: number;
  /** Carry each entity's persisted xstate snapshot to the partition's next owner on a planned move. */
  readonly handOverSnapshot?: boolean;
  /**
   * Keep the ids of this type's active entities in the node's remember store (`remember.store`)
   * and restart them, at a bounded rate, on their partition's next owner after a move or a
   * crash. An id is forgotten when its entity is passivated (idle timeout, cap) or stops on its own.
   */
  readonly remember?: boolean;
  /** Messages kept per partition while it is not active anywhere known (default 1000; oldest dropped). */
  readonly bufferSize?: number;
  /**
   * The message types an entity of this type accepts. When given, any other type is refused:
   * a typed error for a local sender, a logged dead letter for one from another node.
   */
  readonly messages?: readonly string[];
  readonly mailbox?: SpawnOptions['mailbox'];
  /**
   * The level of each entity's `sharding.activated` / `sharding.passivated` line. Default `debug`:
   * written at `info`, a line costs more CPU than the activation it reports. `info` for a witness
   * that checks single activation from the nodes' logs (the chaos runner, the sharding bench).
   */
  readonly activationLog?: 'info' | 'debug';
}

/** What an entity gets as its input. */
export interface EntityInput {
  readonly entityId: string;
}

/** One registered type as the runtime keeps it. */
export interface EntityType {
  readonly name: string;
  readonly logic: AnyActorLogic;
  readonly role: string | undefined;
  readonly passivateAfterMs: number;
  readonly maxActiveEntities: number;
  readonly handOverSnapshot: boolean;
  readonly remember: boolean;
  readonly bufferSize: number;
  readonly messages: ReadonlySet<string> | undefined;
  readonly mailbox: SpawnOptions['mailbox'] | undefined;
  readonly activationLog: 'info' | 'debug';
}

export const DEFAULT_BUFFER_SIZE = 1000;

export function entityTypeOf(name: string, logic: AnyActorLogic, options: EntityTypeOptions): EntityType {
  return {
    name,
    logic,
    role: options.role,
    passivateAfterMs: positiveOr(options.passivateAfterMs, Number.POSITIVE_INFINITY),
    maxActiveEntities: positiveOr(options.maxActiveEntities, Number.POSITIVE_INFINITY),
    handOverSnapshot: options.handOverSnapshot ?? false,
    remember: options.remember ?? false,
    bufferSize: positiveOr(options.bufferSize, DEFAULT_BUFFER_SIZE),
    messages: options.messages ? new Set(options.messages) : undefined,
    mailbox: options.mailbox,
    activationLog: options.activationLog === 'info' ? 'info' : 'debug',
  };
}

function positiveOr(value: number | undefined, fallback: number): number {
  return value !== undefined && value > 0 ? value : fallback;
}

const encoder = new TextEncoder();

/** Why an entity id is refused, or undefined: non-empty, at most MAX_ENTITY_ID_BYTES of UTF-8. */
export function entityIdProblem(id: unknown): string | undefined {
  if (typeof id !== 'string' || id.length === 0) return 'must be a non-empty string';
  // a UTF-16 unit is at most 3 UTF-8 bytes: only long ids pay for the encoding
  if (id.length * 3 > MAX_ENTITY_ID_BYTES && encoder.encode(id).length > MAX_ENTITY_ID_BYTES)
    return `longer than ${MAX_ENTITY_ID_BYTES} bytes`;
  return undefined;
}
