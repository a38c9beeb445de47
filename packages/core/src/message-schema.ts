import { ActorRef } from './actor-ref.js';
import {
  formatNodeAddress,
  isValidPath,
  type NodeAddress,
  parseActorAddress,
  type UniqueNodeAddress,
} from './address.js';
import type { Message } from './message.js';
import { type AuthenticatedNode, isPublicKeyText } from './peer-keys.js';

/**
 * The one way to read a message from the network: a schema of field readers that rebuild the
 * message from validated fields only (unknown fields are dropped, sizes are bounded), plus the
 * identities the message speaks for, which must be the node its connection authenticated as.
 * Nothing a peer sends reaches an actor except what a reader returned.
 */

/** Thrown by a reader; turned into the reject reason `invalid-message` with its path. */
export class FieldError extends Error {
  constructor(
    readonly path: string,
    readonly problem: string,
  ) {
    super(`${path}: ${problem}`);
  }
}

/** Reads one field: returns the rebuilt value or throws FieldError. */
export type Read<T> = (value: unknown, path: string) => T;

export type Shape<T> = { readonly [K in keyof T]-?: Read<T[K]> };

const fail = (path: string, problem: string): never => {
  throw new FieldError(path, problem);
};

const HOST = /^(?:\[[0-9A-Fa-f:.]+\]|[^\s:[\]/@#]+)$/;
const UID = /^[A-Za-z0-9*]{1,64}$/;

function readHost(value: unknown, path: string): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 255) fail(path, 'must be a host');
  return value as string;
}

function readPort(value: unknown, path: string): number {
  if (!Number.isInteger(value) || (value as number) < 1 || (value as number) > 65535)
    fail(path, 'must be a port');
  return value as number;
}

/** `host:port`, IPv6 hosts in brackets (what formatNodeAddress produces). */
function isAddressText(text: string): boolean {
  const i = text.lastIndexOf(':');
  if (i <= 0) return false;
  const port = Number(text.slice(i + 1));
  return Number.isInteger(port) && port >= 1 && port <= 65535 && HOST.test(text.slice(0, i));
}

export const read = {
  string:
    (max = 256): Read<string> =>
    (v, path) =>
      typeof v === 'string' && v.length <= max
        ? v
        : fail(path, `must be a string of at most ${max} characters`),
  /** A non-empty string matching `pattern`. */
  matching:
    (pattern: RegExp, what: string): Read<string> =>
    (v, path) =>
      typeof v === 'string' && pattern.test(v) ? v : fail(path, `must be ${what}`),
  /** A non-negative safe integer. */
  count: ((v, path) =>
    Number.isSafeInteger(v) && (v as number) >= 0
      ? (v as number)
      : fail(path, 'must be a non-negative integer')) as Read<number>,
  /** A clock reading: finite and non-negative (simulated time is fractional). */
  time: ((v, path) =>
    typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : fail(path, 'must be a time')) as Read<number>,
  boolean: ((v, path) => (typeof v === 'boolean' ? v : fail(path, 'must be a boolean'))) as Read<boolean>,
  ref: ((v, path) => (v instanceof ActorRef ? v : fail(path, 'must be an actor ref'))) as Read<ActorRef>,
  path: ((v, path) =>
    typeof v === 'string' && isValidPath(v) ? v : fail(path, 'must be an actor path')) as Read<string>,
  /** `doyen://cluster@host:port/path#uid`: an actor's full address. */
  actorAddress: ((v, path) => {
    if (typeof v !== 'string' || v.length > 1024) return fail(path, 'must be an actor address');
    try {
      parseActorAddress(v);
      return v;
    } catch {
      return fail(path, 'must be an actor address');
    }
  }) as Read<string>,
  /** `host:port` */
  address: ((v, path) =>
    typeof v === 'string' && v.length <= 300 && isAddressText(v)
      ? v
      : fail(path, 'must be host:port')) as Read<string>,
  /** A node identity key: a raw Ed25519 public key as base64url (see PeerKeys). */
  publicKey: ((v, path) =>
    isPublicKeyText(v) ? v : fail(path, 'must be an identity key (base64url Ed25519)')) as Read<string>,
  /** `host:port#uid`: one node incarnation (a member key). */
  memberKey: ((v, path) => {
    if (typeof v !== 'string' || v.length > 400) return fail(path, 'must be host:port#uid');
    const i = v.lastIndexOf('#');
    return i > 0 && isAddressText(v.slice(0, i)) && UID.test(v.slice(i + 1))
      ? v
      : fail(path, 'must be host:port#uid');
  }) as Read<string>,
  nodeAddress: ((v, path) => {
    const n = asRecord(v, path);
    return { host: readHost(n.host, `${path}.host`), port: readPort(n.port, `${path}.port`) };
  }) as Read<NodeAddress>,
  node: ((v, path) => {
    const n = asRecord(v, path);
    const uid = n.uid;
    if (typeof uid !== 'string' || !UID.test(uid)) fail(`${path}.uid`, 'must be a node uid');
    return {
      host: readHost(n.host, `${path}.host`),
      port: readPort(n.port, `${path}.port`),
      uid: uid as string,
    };
  }) as Read<UniqueNodeAddress>,
  oneOf:
    <T extends string>(...values: readonly T[]): Read<T> =>
    (v, path) =>
      values.includes(v as T) ? (v as T) : fail(path, `must be one of ${values.join(', ')}`),
  list:
    <T>(of: Read<T>, max: number): Read<T[]> =>
    (v, path) => {
      if (!Array.isArray(v) || v.length > max) return fail(path, `must be a list of at most ${max}`);
      return v.map((item, i) => of(item, `${path}[${i}]`));
    },
  optional:
    <T>(of: Read<T>): Read<T | undefined> =>
    (v, path) =>
      v === undefined ? undefined : of(v, path),
  /** Present, and either null or `of` (absent is an error, as with any required field). */
  nullable:
    <T>(of: Read<T>): Read<T | null> =>
    (v, path) =>
      v === null ? null : of(v, path),
  object: <T>(shape: Shape<T>): Read<T> => {
    // the field names are listed once, not per message
    const keys = Object.keys(shape) as (keyof T & string)[];
    return (v, path) => readShape(shape, asRecord(v, path), path, keys);
  },
  /** Opaque plain data (a snapshot): copied, acyclic, bounded in depth and size. */
  plainData:
    (maxDepth = 32, maxNodes = 100_000): Read<unknown> =>
    (v, path) => {
      const budget = { nodes: maxNodes };
      return copyPlain(v, path, maxDepth, budget);
    },
};

function asRecord(v: unknown, path: string): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return fail(path, 'must be a map');
  return v as Record<string, unknown>;
}

function readShape<T>(
  shape: Shape<T>,
  source: Record<string, unknown>,
  path: string,
  keys: readonly (keyof T & string)[],
): T {
  const out: Record<string, unknown> = {};
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    const value = shape[key](source[key], path ? `${path}.${key}` : key);
    if (value !== undefined) out[key] = value;
  }
  return out as T;
}

function copyPlain(v: unknown, path: string, depth: number, budget: { nodes: number }): unknown {
  if (--budget.nodes < 0) return fail(path, 'too large');
  if (v === null || v === undefined || typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number') return Number.isFinite(v) ? v : fail(path, 'must be a finite number');
  if (v instanceof Uint8Array) return Buffer.from(v);
  if (v instanceof ActorRef) return v;
  if (depth <= 0) return fail(path, 'nested too deeply');
  if (Array.isArray(v)) return v.map((item, i) => copyPlain(item, `${path}[${i}]`, depth - 1, budget));
  if (typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
    const out: Record<string, unknown> = {};
    // own keys without Object.entries' arrays, and the leaves that need no copy inline (no
    // path string per field): a flat message is copied in a third of the time, same checks
    for (const key in v) {
      if (key === '__proto__' || !Object.hasOwn(v, key)) continue;
      const item = (v as Record<string, unknown>)[key];
      // numbers and refs too (an ask's `n` and `replyTo`): each took a call and a path string
      if (
        item === null ||
        item === undefined ||
        typeof item === 'string' ||
        typeof item === 'boolean' ||
        (typeof item === 'number' && Number.isFinite(item)) ||
        item instanceof ActorRef
      ) {
        if (--budget.nodes < 0) return fail(`${path}.${key}`, 'too large');
        out[key] = item;
      } else out[key] = copyPlain(item, `${path}.${key}`, depth - 1, budget);
    }
    return out;
  }
  return fail(path, 'must be plain data');
}

/**
 * What a message claims to speak for: an actor ref (its node), a node incarnation, a member key
 * `host:port#uid`, or a bare `host:port` (uid not checked).
 */
export type Claim = ActorRef | AuthenticatedNode | UniqueNodeAddress | NodeAddress | string;

/**
 * Who may send a message, as the receiving node sees it (checked against the authenticated
 * origin after its claims, see `MessageTypes.defineAuthority`):
 * - `anyone`: any authenticated peer, a non-member included (a join, a probe from another side);
 * - `member`: a member of this node's view (any status); while the node has no view yet (it is
 *   joining) anyone, since it learns its members from the welcome the protocol then judges;
 * - `coordinator`: the coordinator of this node's view;
 * - `election-peer`: one of the peers of this node's running election.
 * Finer rules (the coordinator this node believes, the seed it asked, the allocator's host at
 * the table's membership) stay with the protocol, which knows them only once it has the view.
 */
export type Authority = 'anyone' | 'member' | 'coordinator' | 'election-peer';

export interface MessageSchema<M extends Message = Message> {
  readonly fields: Shape<Omit<M, 'type'>>;
  /** Identities this message speaks for; each must be the authenticated origin, or it is forged. */
  readonly speaksFor?: (message: M) => readonly Claim[];
  /** Who may send it; an origin without this authority is refused as `unauthorized`. */
  readonly authority: Authority;
}

/**
 * A schema with its message type fixed (for registries that take one per type). The authority
 * is required: every message from the network says who may send it.
 */
export function schema<M extends Message>(
  fields: Shape<Omit<M, 'type'>>,
  speaksFor: ((message: M) => readonly Claim[]) | undefined,
  authority: Authority,
): MessageSchema<M> {
  return speaksFor ? { fields, speaksFor, authority } : { fields, authority };
}

export type ParsedMessage =
  | { readonly ok: true; readonly message: Message }
  | { readonly ok: false; readonly problem: string };

/** Rebuilds `raw` (whose `type` is known) from its schema's fields. */
export function parseWithSchema(type: string, s: MessageSchema, raw: Record<string, unknown>): ParsedMessage {
  try {
    return { ok: true, message: compileRebuild(type, s)(raw) };
  } catch (error) {
    if (error instanceof FieldError) return { ok: false, problem: error.message };
    throw error;
  }
}

/**
 * The rebuild of one message type, compiled once per type (MessageTypes does it at
 * registration): the field names and readers are listed once, and each message costs one new
 * object holding only what the readers returned, then its `type`. Throws FieldError.
 */
export function compileRebuild(type: string, s: MessageSchema): (raw: Record<string, unknown>) => Message {
  const keys = Object.keys(s.fields);
  const readers = keys.map((key) => (s.fields as Shape<Record<string, unknown>>)[key]!);
  return (raw) => {
    const out: Record<string, unknown> = {};
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      const value = readers[i]!(raw[key], key);
      if (value !== undefined) out[key] = value;
    }
    out.type = type;
    return out as unknown as Message;
  };
}

/** The first claim of `message` that is not `origin`, or undefined when all match. */
export function forgedClaim(
  s: MessageSchema,
  message: Message,
  origin: AuthenticatedNode,
): string | undefined {
  if (!s.speaksFor) return undefined;
  const originAddress = formatNodeAddress(origin);
  for (const claim of s.speaksFor(message)) {
    const { address, uid } = claimIdentity(claim);
    if (address !== originAddress || (uid !== undefined && uid !== origin.uid)) {
      return uid === undefined ? address : `${address}#${uid}`;
    }
    // an identity key claimed (a join's) must be the one the connection proved
    const key = keyClaimed(claim);
    if (key !== undefined && origin.publicKey !== undefined && key !== origin.publicKey)
      return `${address}#${uid ?? '*'} with another identity key`;
  }
  return undefined;
}

function keyClaimed(claim: Claim): string | undefined {
  if (typeof claim !== 'object' || claim instanceof ActorRef || !('publicKey' in claim)) return undefined;
  return (claim as AuthenticatedNode).publicKey;
}

function claimIdentity(claim: Claim): { address: string; uid: string | undefined } {
  if (claim instanceof ActorRef) {
    const node = claim.address.node;
    return { address: formatNodeAddress(node), uid: node.uid === '*' ? undefined : node.uid };
  }
  if (typeof claim === 'string') {
    const i = claim.lastIndexOf('#');
    return i < 0
      ? { address: claim, uid: undefined }
      : { address: claim.slice(0, i), uid: claim.slice(i + 1) };
  }
  return {
    address: formatNodeAddress(claim),
    uid: 'uid' in claim ? (claim as UniqueNodeAddress).uid : undefined,
  };
}
