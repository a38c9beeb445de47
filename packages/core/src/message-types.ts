import { nodeKey, type UniqueNodeAddress } from './address.js';
import { DoyenError } from './errors.js';
import type { Message } from './message.js';
import {
  type Authority,
  compileRebuild,
  FieldError,
  forgedClaim,
  type MessageSchema,
} from './message-schema.js';

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

/**
 * One registered type's admission, bound at registration: the message as it may enter this node
 * (rebuilt from its schema), or undefined after `refuse` was told why not. Nothing is allocated
 * for a message that passes a type without a schema; a wire connection keeps the admission of
 * the type it saw last (see `admissionOf`) and skips the lookup for a run of that type.
 */
export type MessageAdmission = (
  message: Message,
  origin: UniqueNodeAddress | undefined,
  refuse: (refusal: MessageRefusal) => void,
) => Message | undefined;

type Entry =
  | { readonly schema: MessageSchema; readonly admit: MessageAdmission }
  | { readonly validate: MessageValidator | undefined; readonly admit: MessageAdmission };

/**
 * The message types this node accepts from the network (like Akka's serialization bindings):
 * anything else is dropped at the boundary before it reaches an actor. A type registered with a
 * schema is rebuilt from its validated fields and its identity claims are checked against the
 * connection; a type registered with a plain validator (or none) is passed on as decoded.
 */
export class MessageTypes {
  private readonly entries = new Map<string, Entry>();
  private readonly authorities = new Map<string, AuthorityCheck>();
  private registrations = 0;

  register<M extends Message>(
    types: string | readonly string[],
    check?: MessageValidator | MessageSchema<M>,
  ): this {
    for (const type of typeof types === 'string' ? [types] : types) {
      const entry: Entry =
        typeof check === 'object'
          ? {
              schema: check as unknown as MessageSchema,
              admit: this.schemaAdmission(type, check as unknown as MessageSchema),
            }
          : { validate: check, admit: validatorAdmission(check) };
      this.entries.set(type, entry);
    }
    this.registrations++;
    return this;
  }

  /**
   * Counts registrations: an admission kept from `admissionOf` is the type's current one while
   * this has not changed (a type registered again gets a new one).
   */
  get generation(): number {
    return this.registrations;
  }

  /** The admission of `type` as registered now, or undefined when it is not registered. */
  admissionOf(type: string): MessageAdmission | undefined {
    return this.entries.get(type)?.admit;
  }

  /** `parse` without the result wrapper: the admitted message, or undefined after `refuse`. */
  admit(
    message: Message,
    origin: UniqueNodeAddress | undefined,
    refuse: (refusal: MessageRefusal) => void,
  ): Message | undefined {
    const entry = this.entries.get(message.type);
    if (entry) return entry.admit(message, origin, refuse);
    refuse(unknownType(message.type));
    return undefined;
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
    let refusal: MessageRefusal | undefined;
    const admitted = this.admit(message, origin, (r) => {
      refusal = r;
    });
    return admitted === undefined ? refusal! : { ok: true, message: admitted };
  }

  /**
   * A schema type's admission: rebuilt by the compiled readers, then (with `origin`) every
   * identity it claims must be `origin` and `origin` must hold the type's authority, looked up
   * per message (who holds it changes with the view).
   */
  private schemaAdmission(type: string, schema: MessageSchema): MessageAdmission {
    const rebuild = compileRebuild(type, schema);
    return (message, origin, refuse) => {
      let rebuilt: Message;
      try {
        rebuilt = rebuild(message as unknown as Record<string, unknown>);
      } catch (error) {
        if (!(error instanceof FieldError)) throw error;
        refuse({ ok: false, reason: 'invalid-message', detail: `${type}: ${error.message}` });
        return undefined;
      }
      if (!origin) return rebuilt;
      const claimed = forgedClaim(schema, rebuilt, origin);
      if (claimed !== undefined) {
        refuse({ ok: false, reason: 'forged', claimed, detail: `${type} claims to speak for ${claimed}` });
        return undefined;
      }
      const authority = schema.authority;
      if (!this.allows(authority, origin)) {
        refuse({
          ok: false,
          reason: 'unauthorized',
          authority,
          detail: `${type} may be sent only by ${authority}, not ${nodeKey(origin)}`,
        });
        return undefined;
      }
      return rebuilt;
    };
  }
}

function unknownType(type: string): MessageRefusal {
  return {
    ok: false,
    reason: 'unknown-type',
    detail: `unknown message type ${JSON.stringify(type.slice(0, 100))}`,
  };
}

/** A type without a schema: passed on as decoded once its validator (if any) accepts it. */
function validatorAdmission(validate: MessageValidator | undefined): MessageAdmission {
  if (!validate) return (message) => message;
  return (message, _origin, refuse) => {
    const problem = runValidator(validate, message);
    if (problem === undefined) return message;
    refuse({ ok: false, reason: 'invalid-message', detail: `${message.type}: ${problem}` });
    return undefined;
  };
}

/**
 * The last origin checked and its key: a connection's messages come from one origin, and a key
 * built per message cost a string concatenation and a fresh hash in the authority's lookup
 * (~0.1 µs a message, issue 29's sharded tell). Compared by its fields, not its identity.
 */
let lastOrigin: UniqueNodeAddress = { host: '', port: 0, uid: '' };
let lastOriginKey = nodeKey(lastOrigin);

function originKey(origin: UniqueNodeAddress): string {
  if (origin.uid !== lastOrigin.uid || origin.port !== lastOrigin.port || origin.host !== lastOrigin.host) {
    lastOrigin = { host: origin.host, port: origin.port, uid: origin.uid };
    lastOriginKey = nodeKey(lastOrigin);
  }
  return lastOriginKey;
}

/** A throwing check refuses (it must never let a message through by accident, nor crash). */
function runCheck(holds: AuthorityCheck, origin: UniqueNodeAddress): boolean {
  try {
    return holds(originKey(origin), origin);
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
