import type { IncomingMessage, Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { WebSocket, WebSocketServer } from 'ws';
import type { WireConfig } from './config.js';
import { type RejectReason, WS_PATH } from './protocol.js';

/**
 * One unauthenticated connection's hold on its remote IP's quota, from TCP accept until it
 * authenticates or closes. `release` may be called any number of times; it counts once.
 */
export interface PendingSlot {
  readonly ip: string;
  /** The source is a known peer's (member, seed, contact): it may use the reserved slots. */
  readonly known: boolean;
  release(): void;
}

export interface AdmissionHooks {
  readonly reject: (reason: RejectReason, detail: string, peer: string) => void;
  /** A connection completed the WebSocket upgrade; it still holds `slot` until it authenticates. */
  readonly upgraded: (socket: WebSocket, remote: string, slot: PendingSlot) => void;
  /** Whether a source IP (as quotaKeyOf gives it) is a known peer's: see reservedHandshakeSlots. */
  readonly isKnownSource: (ip: string) => boolean;
}

interface Upgrading {
  readonly timer: NodeJS.Timeout;
  readonly slot: PendingSlot;
}

/**
 * The limits in front of the handshake, on the HTTP server the WebSocket server is attached to:
 * TCP connections that have not completed the HTTP upgrade are capped (`maxPendingUpgrades`)
 * and cut after `upgradeTimeoutMs`; each remote IP may hold `maxPendingHandshakesPerIp`
 * unauthenticated connections (upgraded or not), so one host cannot take every handshake slot;
 * and `reservedHandshakeSlots` of them are kept for the sources of known peers, so many hosts
 * together cannot either (8 source IPs × 8 silent sockets made a join take 12.7 s, not 0.96 s).
 * Anything but a WebSocket upgrade to `WS_PATH` is answered with an HTTP error and closed.
 *
 * Connections are keyed by `remoteAddress:remotePort`, which a TLS socket shares with the TCP
 * socket under it, so the same bookkeeping works for an https server.
 */
export class Admission {
  private readonly upgrading = new Map<string, Upgrading>();
  private readonly perIp = new Map<string, number>();
  private closed = false;

  constructor(
    server: Server,
    private readonly wss: WebSocketServer,
    private readonly config: WireConfig,
    private readonly hooks: AdmissionHooks,
  ) {
    server.on('connection', (socket: Socket) => this.onConnection(socket));
    server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) =>
      this.onUpgrade(request, socket, head),
    );
    server.on('request', (request: IncomingMessage, response) => {
      this.hooks.reject('not-websocket', 'plain HTTP request', remoteOf(request.socket));
      response.writeHead(426, { Connection: 'close', 'Content-Type': 'text/plain' });
      response.end('WebSocket only\n');
    });
  }

  /** TCP connections that have not completed the HTTP upgrade. */
  get pendingUpgrades(): number {
    return this.upgrading.size;
  }

  /** Unauthenticated connections from one remote IP address (an IPv6 /64). */
  pendingFrom(ip: string): number {
    return this.perIp.get(ip) ?? 0;
  }

  /** Stops admitting: new connections are cut, and so are those still upgrading. */
  close(): void {
    this.closed = true;
    for (const { timer } of this.upgrading.values()) clearTimeout(timer);
  }

  private onConnection(socket: Socket): void {
    const remote = remoteOf(socket);
    const ip = quotaKeyOf(socket.remoteAddress ?? 'unknown');
    if (this.closed) {
      socket.destroy();
      return;
    }
    const known = this.hooks.isKnownSource(ip);
    const limit = known
      ? this.config.maxPendingUpgrades
      : this.config.maxPendingUpgrades - this.config.reservedHandshakeSlots;
    if (this.upgrading.size >= limit) {
      this.hooks.reject('too-many-upgrades', 'too many connections before the WebSocket upgrade', remote);
      socket.destroy();
      return;
    }
    if (this.pendingFrom(ip) >= this.config.maxPendingHandshakesPerIp) {
      this.hooks.reject(
        'too-many-handshakes-from-ip',
        `too many unauthenticated connections from ${ip}`,
        remote,
      );
      socket.destroy();
      return;
    }
    this.perIp.set(ip, this.pendingFrom(ip) + 1);
    let held = true;
    const slot: PendingSlot = {
      ip,
      known,
      release: () => {
        if (!held) return;
        held = false;
        const left = this.pendingFrom(ip) - 1;
        if (left > 0) this.perIp.set(ip, left);
        else this.perIp.delete(ip);
      },
    };
    const timer = setTimeout(() => {
      this.hooks.reject('upgrade-timeout', 'no WebSocket upgrade in time', remote);
      socket.destroy();
    }, this.config.upgradeTimeoutMs);
    timer.unref();
    const entry: Upgrading = { timer, slot };
    this.upgrading.set(remote, entry);
    socket.once('close', () => {
      clearTimeout(timer);
      if (this.upgrading.get(remote) === entry) this.upgrading.delete(remote);
      slot.release();
    });
  }

  private onUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    const remote = remoteOf(request.socket);
    const entry = this.upgrading.get(remote);
    if (!entry || this.closed) {
      socket.destroy();
      return;
    }
    this.upgrading.delete(remote);
    clearTimeout(entry.timer);
    if (pathOf(request.url) !== WS_PATH) {
      this.hooks.reject(
        'not-websocket',
        `upgrade to ${JSON.stringify((request.url ?? '').slice(0, 100))}`,
        remote,
      );
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n', () => socket.destroy());
      return;
    }
    // ws answers a bad upgrade request itself (400) and closes: the socket's 'close' releases the slot
    this.wss.handleUpgrade(request, socket, head, (ws) => this.hooks.upgraded(ws, remote, entry.slot));
  }
}

/**
 * What shares one quota: an IPv4 address (IPv4-mapped IPv6 included), or an IPv6 /64 — the
 * block one host or subscriber usually gets, so rotating through it does not multiply the quota.
 */
export function quotaKeyOf(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1]!;
  if (!ip.includes(':')) return ip;
  const [head = '', tail = ''] = ip.split('%')[0]!.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = ip.includes('::')
    ? [...left, ...Array(8 - left.length - right.length).fill('0'), ...right]
    : left;
  return `${groups
    .slice(0, 4)
    .map((g) => Number.parseInt(g || '0', 16).toString(16))
    .join(':')}::/64`;
}

function remoteOf(socket: { remoteAddress?: string; remotePort?: number }): string {
  return `${socket.remoteAddress}:${socket.remotePort}`;
}

function pathOf(url: string | undefined): string {
  const q = (url ?? '').indexOf('?');
  return q < 0 ? (url ?? '') : (url ?? '').slice(0, q);
}
