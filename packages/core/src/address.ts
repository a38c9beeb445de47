import { InvalidAddressError } from './errors.js';

/** Where a node listens. Rendered `host:port` (IPv6 hosts in brackets). */
export interface NodeAddress {
  readonly host: string;
  readonly port: number;
}

/** One incarnation of a node: the same address after a restart is a different uid. */
export interface UniqueNodeAddress extends NodeAddress {
  readonly uid: string;
}

/** A parsed actor address: `doyen://<cluster>@<host>:<port>/<path>#<node uid>`. */
export interface ActorAddress {
  readonly cluster: string;
  readonly node: UniqueNodeAddress;
  readonly path: string;
}

const PATH_SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$/;

export function formatNodeAddress(node: NodeAddress): string {
  return node.host.includes(':') ? `[${node.host}]:${node.port}` : `${node.host}:${node.port}`;
}

export function parseNodeAddress(text: string): NodeAddress {
  const m = /^(?:\[([^\]]+)\]|([^:[\]/@#]+)):(\d{1,5})$/.exec(text.trim());
  if (!m) throw new InvalidAddressError(text, 'expected host:port');
  const port = Number(m[3]);
  if (port > 65535) throw new InvalidAddressError(text, 'port out of range');
  return { host: (m[1] ?? m[2])!, port };
}

/**
 * `host:port#uid`: the key of one incarnation of a node, the one way a member is named in
 * membership views, observations, tables and logs; from a node address with its uid, or from a
 * cluster member (its `host:port` address, already formatted, and its uid). Read back with
 * `nodeOfKey` / `addressOfKey`.
 */
export function nodeKey(
  node: UniqueNodeAddress | { readonly address: string; readonly uid: string },
): string {
  return 'address' in node ? `${node.address}#${node.uid}` : `${formatNodeAddress(node)}#${node.uid}`;
}

/** The node incarnation a `host:port#uid` key names; InvalidAddressError for anything else. */
export function nodeOfKey(key: string): UniqueNodeAddress {
  const i = key.lastIndexOf('#');
  if (i <= 0 || i === key.length - 1) throw new InvalidAddressError(key, 'expected host:port#uid');
  return { ...parseNodeAddress(key.slice(0, i)), uid: key.slice(i + 1) };
}

/** The `host:port` of a `host:port#uid` key (a text without `#uid` is returned as it is). */
export function addressOfKey(key: string): string {
  const i = key.lastIndexOf('#');
  return i < 0 ? key : key.slice(0, i);
}

export function sameNode(a: NodeAddress, b: NodeAddress): boolean {
  return a.port === b.port && a.host === b.host;
}

/** Longest segment PATH_SEGMENT admits. */
const MAX_SEGMENT = 64;

/**
 * `/`-separated segments, each as PATH_SEGMENT says, in one pass over the characters: every remote
 * message's recipient and every ask's reply address is checked, and splitting and a regex per
 * segment cost ~0.15 µs a path, several times an ask (issue 29).
 */
export function isValidPath(path: string): boolean {
  const length = path.length;
  if (length > 512 || path.charCodeAt(0) !== 0x2f /* / */) return false;
  let segment = 0;
  for (let i = 1; i < length; i++) {
    const c = path.charCodeAt(i);
    if (c === 0x2f) {
      if (segment === 0) return false;
      segment = 0;
    } else if (isNameChar(c) || (c === 0x2e /* . */ && segment > 0)) {
      if (++segment > MAX_SEGMENT) return false;
    } else return false;
  }
  return segment > 0;
}

/** [A-Za-z0-9_-]: a path segment's characters, `.` aside (not first). */
function isNameChar(c: number): boolean {
  return (
    (c >= 0x61 && c <= 0x7a) || // a-z
    (c >= 0x41 && c <= 0x5a) || // A-Z
    (c >= 0x30 && c <= 0x39) || // 0-9
    c === 0x5f || // _
    c === 0x2d // -
  );
}

export function isValidName(name: string): boolean {
  return PATH_SEGMENT.test(name);
}

export function formatActorAddress(address: ActorAddress): string {
  return `doyen://${address.cluster}@${formatNodeAddress(address.node)}${address.path}#${address.node.uid}`;
}

export function parseActorAddress(text: string): ActorAddress {
  const location = parseActorLocation(text);
  if (location.uid === undefined)
    throw new InvalidAddressError(
      text,
      "expected doyen://<cluster>@<host>:<port>/<path>#<uid>; the uid names the node incarnation (a ref's id carries it; `node.refFor(address)` in doyen resolves the current one)",
    );
  // the node's fields named: a spread with an added field took V8's slow path (~0.5 µs an address)
  const { host, port } = location.node;
  return { cluster: location.cluster, node: { host, port, uid: location.uid }, path: location.path };
}

/** An actor's place, `doyen://<cluster>@<host>:<port>/<path>` with or without `#<uid>`. */
export interface ActorLocation {
  readonly cluster: string;
  readonly node: NodeAddress;
  readonly path: string;
  /** The node incarnation, when the address names one. */
  readonly uid: string | undefined;
}

/**
 * The last address's `doyen://<cluster>@<host>:<port>` as the full parse found it valid, and its
 * parts: addresses come in runs from one node (an ask's reply address, a connection's senders),
 * and the regex cost ~0.6 µs an address, twice an ask on the owner (issue 29). An address with this
 * prefix followed by `/` splits there whatever follows (no group of the regex can take a `/` before
 * the path), so only the path and the uid are left to check. One entry: never grows.
 */
let lastPrefix = '';
let lastCluster = '';
let lastNode: NodeAddress = { host: '', port: 0 };

/** [A-Za-z0-9]+ or `*`: a uid as the address regex takes it. */
function isUid(text: string, from: number): boolean {
  const length = text.length;
  if (from >= length) return false;
  if (length - from === 1 && text.charCodeAt(from) === 0x2a /* * */) return true;
  for (let i = from; i < length; i++) {
    const c = text.charCodeAt(i);
    if (!((c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39))) return false;
  }
  return true;
}

/** `parseActorLocation` for an address that starts with `lastPrefix` and `/`; undefined to parse it in full. */
function locationAfterKnownPrefix(text: string): ActorLocation | undefined {
  const start = lastPrefix.length;
  if (start === 0 || text.charCodeAt(start) !== 0x2f || !text.startsWith(lastPrefix)) return undefined;
  const hash = text.indexOf('#', start);
  // the regex's own order: a bad uid fails the match before the path is looked at
  if (hash >= 0 && !isUid(text, hash + 1)) return undefined;
  const path = hash < 0 ? text.slice(start) : text.slice(start, hash);
  if (!isValidPath(path)) throw new InvalidAddressError(text, `bad path ${path}`);
  return {
    cluster: lastCluster,
    node: { host: lastNode.host, port: lastNode.port },
    path,
    uid: hash < 0 ? undefined : text.slice(hash + 1),
  };
}

/** Parses an actor address whose `#uid` is optional (a path on whichever incarnation runs there). */
export function parseActorLocation(text: string): ActorLocation {
  const known = locationAfterKnownPrefix(text);
  if (known !== undefined) return known;
  const m =
    /^doyen:\/\/([A-Za-z0-9_.-]+)@(\[[^\]]+\]|[^:[\]/@#]+):(\d{1,5})(\/[^#]*)(?:#([A-Za-z0-9]+|\*))?$/.exec(
      text,
    );
  if (!m) throw new InvalidAddressError(text, 'expected doyen://<cluster>@<host>:<port>/<path>#<uid>');
  const [, cluster, rawHost, port, path, uid] = m as unknown as [
    string,
    string,
    string,
    string,
    string,
    string | undefined,
  ];
  if (!isValidPath(path)) throw new InvalidAddressError(text, `bad path ${path}`);
  const portNumber = Number(port);
  if (portNumber > 65535) throw new InvalidAddressError(text, 'port out of range');
  const host = rawHost.startsWith('[') ? rawHost.slice(1, -1) : rawHost;
  lastPrefix = text.slice(0, text.length - path.length - (uid === undefined ? 0 : uid.length + 1));
  lastCluster = cluster;
  lastNode = { host, port: portNumber };
  return { cluster, node: { host, port: portNumber }, path, uid };
}
