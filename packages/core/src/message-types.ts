import { nodeKey, type UniqueNodeAddress } from './address.js';
import { DoyenError } from './errors.js';
import type { Message } from './message.js';
import { type Authority, forgedClaim, type MessageSchema, parseWithSchema } from './message-schema.js';

/** Checks one decoded message; returns a reason when it is malformed (for types without a schema). */
export type MessageValidator = (message: Message) => string | undefined;

export class UnknownMessageTypeError extends DoyenError {
  constructor(readonly messageType: string) {
    super(`message type ${JSON.stringify(messageType)} is not registered`, 'unknown-message-type');
  }
}

/** Why a message from the network was refused. */
export type MessageRefusal =
  | { readonly ok: false; readonly reason: 'unknown-type' | 'invalid-message'; readonly detail: string }
  | { readonly ok: false; readonly reason: 'forged'; readonly detail: string; readonly claimed: string }
  | {
      readonly ok: false;
      readonly reason: 'unauthorized';
      readonly detail: string;
      readonly authority: Authority;
    };

/** Answers whether an origin (`host:port#uid`, as `memberKey` writes it) holds an authority now. */
export type AuthorityCheck = (originKey: string, origin: UniqueNodeAddress) => boolean;

type Entry = { readonly schema: MessageSchema } | { readonly validate: MessageValidator | undefined };

/**
 * The message types this node accepts from the network (like Akka's serialization bindings):
 * anything else is dropped at the boundary before it reaches an actor. A type registered with a
 * schema is rebuilt from its validated fields and its identity claims are checked against the
 * connection; a type registered with a plain validator (or none) is passed on as decoded.
 */
export class MessageTypes {
  private readonly entries = new Map<string, Entry>();
  private readonly authorities = new Map<string, AuthorityCheck>();

  register<M extends Message>(
    types: string | readonly string[],
    check?: MessageValidator | MessageSchema<M>,
  ): this {
    const entry: Entry =
      typeof check === 'object' ? { schema: check as unknown as MessageSchema } : { validate: check };
    for (const type of typeof types === 'string' ? [types] : types) this.entries.set(type, entry);
    return this;
  }

  has(type: string): boolean {
    return this.entries.has(type);
  }

  /** Every registered type (for audits: each protocol type must declare an authority). */
  types(): string[] {
    return [...this.entries.keys()];
  }

  /**
   * The authority a type's schema declares; undefined for a type registered without a schema
   * (an app's own, passed on as decoded: any peer may send it) or not registered.
   */
  authorityOf(type: string): Authority | undefined {
    const entry = this.entries.get(type);
    return entry && 'schema' in entry ? entry.schema.authority : undefined;
  }

  /**
   * Installs who holds `authority` as this node sees it (the cluster installs `member` and
   * `coordinator` from its view, a running election `election-peer`). Until one is
   * installed an authority is held by every origin: a bare ActorSystem believes its peers, as
   * before. Returns the uninstaller (it removes only this check).
   */
  defineAuthority(authority: Exclude<Authority, 'anyone'>, holds: AuthorityCheck): () => void {
    this.authorities.set(authority, holds);
    return () => {
      if (this.authorities.get(authority) === holds) this.authorities.delete(authority);
    };
  }

  /** Whether `origin` may send a message declaring `authority` (true when none is installed). */
  allows(authority: Authority, origin: UniqueNodeAddress): boolean {
    if (authority === 'anyone') return true;
    const holds = this.authorities.get(authority);
    return holds === undefined || runCheck(holds, origin);
  }

  /** `undefined` when acceptable, otherwise the reason it is not (identity claims not checked). */
  check(message: Message): string | undefined {
    const result = this.parse(message, undefined);
    return result.ok ? undefined : result.detail;
  }

  /**
   * The message as it may enter this node, rebuilt from its schema, or why not. With `origin`
   * (the node the connection authenticated as), every identity the message claims must be it,
   * and it must hold the authority the type declares.
   */
  parse(
    message: Message,
    origin: UniqueNodeAddress | undefined,
  ): { readonly ok: true; readonly message: Message } | MessageRefusal {
    const entry = this.entries.get(message.type);
    if (!entry) {
      return {
        ok: false,
        reason: 'unknown-type',
        detail: `unknown message type ${JSON.stringify(message.type.slice(0, 100))}`,
      };
    }
    if ('validate' in entry) {
      const problem = entry.validate ? runValidator(entry.validate, message) : undefined;
      return problem === undefined
        ? { ok: true, message }
        : { ok: false, reason: 'invalid-message', detail: `${message.type}: ${problem}` };
    }
    const parsed = parseWithSchema(message.type, entry.schema, message as unknown as Record<string, unknown>);
    if (!parsed.ok)
      return { ok: false, reason: 'invalid-message', detail: `${message.type}: ${parsed.problem}` };
    if (origin) {
      const claimed = forgedClaim(entry.schema, parsed.message, origin);
      if (claimed !== undefined) {
        return {
          ok: false,
          reason: 'forged',
          claimed,
          detail: `${message.type} claims to speak for ${claimed}`,
        };
      }
      const authority = entry.schema.authority;
      if (!this.allows(authority, origin)) {
        return {
          ok: false,
          reason: 'unauthorized',
          authority,
          detail: `${message.type} may be sent only by ${authority}, not ${nodeKey(origin)}`,
        };
      }
    }
    return parsed;
  }
}

/** A throwing check refuses (it must never let a message through by accident, nor crash). */
function runCheck(holds: AuthorityCheck, origin: UniqueNodeAddress): boolean {
  try {
    return holds(nodeKey(origin), origin);
  } catch {
    return false;
  }
}

function runValidator(validate: MessageValidator, message: Message): string | undefined {
  try {
    return validate(message);
  } catch (error) {
    return `validator threw: ${(error as Error).message}`;
  }
}
