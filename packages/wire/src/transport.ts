import { createServer, type Server } from 'node:http';
import { type AddressInfo, isIP } from 'node:net';
import {
  ActorSystem,
  type ActorSystemConfig,
  type Envelope,
  formatNodeAddress,
  type Lane,
  type NodeAddress,
  RateLimitedLog,
  type RemoteTransport,
  type UniqueNodeAddress,
} from '@doyen/core';
import { WebSocketServer } from 'ws';
import { Admission } from './admission.js';
import { Association } from './association.js';
import { resolveWireConfig, type WireConfig } from './config.js';
import { InboundConnection } from './inbound.js';
import { CLOSE_CODE_OF, CloseCode, type RejectReason, UNAUTHENTICATED_CLOSE_REASON } from './protocol.js';
import { reportRejected } from './rejections.js';
import { TlsEndpoint } from './tls-endpoint.js';

/** How long a removed peer's queued messages may take to leave. */
const FORGET_GRACE_MS = 1000;
/** How long a closing node waits for its queues to drain. */
const CLOSE_GRACE_MS = 250;

export interface PeerConnectedEvent {
  readonly node: UniqueNodeAddress;
  readonly lane: Lane;
}

/**
 * The WebSocket transport of one node: a `ws` server accepting peers' outbound connections,
 * and one association (outbound connection) per peer and lane. Connections are one-way, as in
 * Akka's Artery: each node sends on the connections it dialled and receives on those it
 * accepted, so the system lane never waits behind the user lane, not even in a TCP buffer.
 */
export class WsTransport implements RemoteTransport {
  private readonly associations = new Map<string, Association>();
  /**
   * Peers whose traffic silently vanishes in both directions (Akka's test-conductor blackhole).
   * Only for tests and demos: a node exposes it only when started with fault injection enabled.
   */
  private readonly blackholed = new Set<string>();
  private readonly byNode = new WeakMap<UniqueNodeAddress, { system?: Association; user?: Association }>();
  private readonly inbound = new Set<InboundConnection>();
  private readonly rejectLog: RateLimitedLog;
  private readonly admission: Admission;
  /** Upgraded connections that have not authenticated yet. */
  private pendingHandshakes = 0;
  private closed = false;

  private constructor(
    private readonly server: Server,
    private readonly wss: WebSocketServer,
    readonly system: ActorSystem,
    readonly config: WireConfig,
    /** Mutual TLS (`wire.tls`): the https server under `server`, and the options of every dial. */
    readonly tls: TlsEndpoint | undefined = undefined,
    /** The local address dials leave from (see dialSourceOf). */
    private readonly dialFrom: string | undefined = undefined,
  ) {
    this.rejectLog = new RateLimitedLog(system.logger, () => Date.now(), 20);
    const ownAddresses = new Set([formatNodeAddress(system.node), ...config.aliases]);
    this.admission = new Admission(server, wss, config, {
      reject: (reason, detail, peer) => this.reject(reason, detail, peer),
      upgraded: (socket, remote, slot) => {
        const refuse = (code: number, reason: string) => {
          socket.close(code, reason);
          // a peer that ignores the close handshake is cut off
          setTimeout(() => socket.terminate(), 1000).unref();
        };
        if (this.closed) {
          refuse(CloseCode.notReady, 'node is shutting down');
          return;
        }
        if (this.pendingHandshakes >= config.maxPendingHandshakes) {
          this.reject('too-many-handshakes', 'too many unauthenticated connections', remote);
          refuse(CLOSE_CODE_OF['too-many-handshakes'], UNAUTHENTICATED_CLOSE_REASON);
          return;
        }
        this.pendingHandshakes++;
        let pending = true;
        const settle = () => {
          if (pending) this.pendingHandshakes--;
          pending = false;
          slot.release();
        };
        const connection = new InboundConnection(system, config, socket, remote, ownAddresses, {
          reject: (reason, detail, peer) => this.reject(reason, detail, peer),
          blackholed: (peer) => this.blackholed.has(peer),
          handshakeDone: (c) => {
            settle();
            this.inbound.add(c);
            system.metrics.inc('doyen_wire_inbound_connections_total', 'Inbound connections accepted', {
              lane: c.lane ?? 'unknown',
            });
          },
          closed: (c) => {
            settle();
            this.inbound.delete(c);
          },
        });
        void connection;
      },
    });
  }

  /**
   * Binds the server (port 0 picks a free one), then creates the node's actor system at the
   * bound address and attaches itself to it.
   */
  static async start(
    options: Omit<ActorSystemConfig, 'port'> & {
      port: number;
      wire?: Partial<WireConfig>;
      bindHost?: string;
    },
  ): Promise<WsTransport> {
    const config = resolveWireConfig(options.wire);
    // wire.tls: the server is an https server that demands a certificate from the cluster CA
    const tls = config.tls ? TlsEndpoint.create(config.tls, config.handshakeTimeoutMs) : undefined;
    const server: Server = tls ? (tls.server as unknown as Server) : createServer();
    // Upgrades are routed by Admission (limits first); doyen never uses pings, so none are answered.
    const wss = new WebSocketServer({
      noServer: true,
      maxPayload: config.maxFrameBytes,
      perMessageDeflate: false,
      clientTracking: true,
      autoPong: false,
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port, options.bindHost ?? options.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    server.on('error', () => {});
    // Errors on sockets before the upgrade (resets, garbage) only close them.
    server.on('clientError', (_error, socket) => socket.destroy());
    const port = (server.address() as AddressInfo).port;
    const system = new ActorSystem({ ...options, port });
    const transport = new WsTransport(
      server,
      wss,
      system,
      config,
      tls,
      dialSourceOf(options.bindHost ?? options.host),
    );
    tls?.attach(system);
    system.attachTransport(transport);
    if (!config.secret) {
      system.logger.warn(
        { event: 'wire.no-secret' },
        'no cluster secret configured: any process that can reach this port may join',
      );
    }
    return transport;
  }

  get port(): number {
    return this.system.node.port;
  }

  send(node: UniqueNodeAddress, envelope: Envelope, lane: Lane): void {
    if (this.closed) {
      this.system.deadLetter(envelope.to, envelope.message, envelope.from, 'system-terminated');
      return;
    }
    if (this.blackholed.size > 0 && this.blackholed.has(formatNodeAddress(node))) return;
    // Refs keep their node object, so most sends find their association without building a key.
    const cached = this.byNode.get(node);
    let association = lane === 'system' ? cached?.system : cached?.user;
    if (!association || association.isClosed) {
      const key = `${lane}|${formatNodeAddress(node)}`;
      association = this.associations.get(key);
      if (!association) {
        association = new Association(
          this.system,
          this.config,
          { host: node.host, port: node.port },
          lane,
          this.tls?.dialOptions,
          this.dialFrom,
        );
        this.associations.set(key, association);
      }
      const entry = cached ?? {};
      entry[lane] = association;
      if (!cached) this.byNode.set(node, entry);
    }
    association.enqueue(envelope);
  }

  /**
   * Drops the associations to a node the cluster removed. What is already queued (such as the
   * update telling it that it was downed) still goes out, within a short grace period.
   */
  forget(node: NodeAddress): void {
    for (const lane of ['system', 'user'] as const) {
      const key = `${lane}|${formatNodeAddress(node)}`;
      const association = this.associations.get(key);
      if (!association) continue;
      this.associations.delete(key);
      void association.closeWhenFlushed(FORGET_GRACE_MS, 'peer removed');
    }
  }

  /** Fault injection: drop all traffic to and from these `host:port` peers until `heal`. */
  blackhole(peers: readonly string[]): void {
    for (const p of peers) this.blackholed.add(p);
    this.system.logger.warn(
      { event: 'fault.blackhole', peers: [...this.blackholed] },
      'fault injection: blackholing peers',
    );
  }

  heal(peers?: readonly string[]): void {
    if (peers) for (const p of peers) this.blackholed.delete(p);
    else this.blackholed.clear();
    this.system.logger.warn({ event: 'fault.heal', peers: [...this.blackholed] }, 'fault injection: healed');
  }

  /** Messages waiting to be sent to a node on a lane (for tests and metrics). */
  queued(node: NodeAddress, lane: Lane): number {
    return this.associations.get(`${lane}|${formatNodeAddress(node)}`)?.queued ?? 0;
  }

  /** Whether the outbound connection to a node on a lane has completed its handshake. */
  isConnected(node: NodeAddress, lane: Lane): boolean {
    return this.associations.get(`${lane}|${formatNodeAddress(node)}`)?.isReady ?? false;
  }

  get inboundConnections(): number {
    return this.inbound.size;
  }

  /** Upgraded connections still in their handshake (for tests and metrics). */
  get pendingHandshakeCount(): number {
    return this.pendingHandshakes;
  }

  /** TCP connections that have not completed the HTTP upgrade (for tests and metrics). */
  get pendingUpgradeCount(): number {
    return this.admission.pendingUpgrades;
  }

  private reject(reason: RejectReason, detail: string, peer: string): void {
    reportRejected(this.system, this.rejectLog, reason, detail, peer);
  }

  /**
   * Closes every connection and the server, then terminates the actor system. Queued system
   * messages (a last membership update, a merge order) get `graceMs` to go out first.
   */
  async close(graceMs = CLOSE_GRACE_MS): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all(
      [...this.associations.values()].map((a) => a.closeWhenFlushed(graceMs, 'node shutting down')),
    );
    this.associations.clear();
    for (const c of this.inbound) c.close('shutdown', 'node shutting down');
    for (const client of this.wss.clients) client.terminate();
    this.admission.close();
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
    this.wss.close();
    await this.tls?.close();
    this.system.terminate();
  }
}

/**
 * Dials leave from the address the server listens on when that is one IP address: a peer checks
 * that a hello naming an IP comes from it (verifyPeerAddress), and on a host with several
 * addresses (or 127.0.0.x beside 127.0.0.1) the kernel would otherwise pick another source.
 * A wildcard or a name leaves the choice to the kernel.
 */
function dialSourceOf(listenHost: string): string | undefined {
  const bare = listenHost.startsWith('[') ? listenHost.slice(1, -1) : listenHost;
  if (isIP(bare) === 0 || bare === '0.0.0.0' || bare === '::') return undefined;
  return bare;
}
