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

export function isValidPath(path: string): boolean {
  if (!path.startsWith('/') || path.length > 512) return false;
  const segments = path.slice(1).split('/');
  return segments.every((s) => PATH_SEGMENT.test(s));
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
  return { cluster: location.cluster, node: { ...location.node, uid: location.uid }, path: location.path };
}

/** An actor's place, `doyen://<cluster>@<host>:<port>/<path>` with or without `#<uid>`. */
export interface ActorLocation {
  readonly cluster: string;
  readonly node: NodeAddress;
  readonly path: string;
  /** The node incarnation, when the address names one. */
  readonly uid: string | undefined;
}

/** Parses an actor address whose `#uid` is optional (a path on whichever incarnation runs there). */
export function parseActorLocation(text: string): ActorLocation {
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
  return { cluster, node: { host, port: portNumber }, path, uid };
}
