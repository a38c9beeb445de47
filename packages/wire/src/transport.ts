import { createServer, type Server } from 'node:http';
import { type AddressInfo, isIP } from 'node:net';
import {
  ActorSystem,
  type ActorSystemConfig,
  type Envelope,
  formatNodeAddress,
  type Lane,
  type NodeAddress,
  nodeKey,
  RateLimitedLog,
  type RemoteTransport,
  type UniqueNodeAddress,
} from '@doyen/core';
import { WebSocketServer } from 'ws';
import { Admission } from './admission.js';
import { Association } from './association.js';
import { resolveWireConfig, type WireConfig } from './config.js';
import { InboundConnection } from './inbound.js';
import { InboundRegistry } from './inbound-registry.js';
import { InboundScheduler } from './inbound-scheduler.js';
import { KnownPeers } from './known-peers.js';
import { NodeIdentity } from './node-identity.js';
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
  /** Authenticated inbound connections by identity and lane, capped (see InboundRegistry). */
  private readonly registry: InboundRegistry<InboundConnection>;
  /** The one decode budget all inbound connections share, in turn. */
  private readonly scheduler: InboundScheduler<InboundConnection>;
  /** Members, seeds and contacts as the cluster layer reports them (see setKnownPeers). */
  private readonly known = new KnownPeers();
  private readonly rejectLog: RateLimitedLog;
  /** Who hears of refused dials (the failure detector, through ActorSystem.onConnectionRefused). */
  private readonly refusedListeners = new Set<(node: NodeAddress) => void>();
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
    readonly tls: TlsEndpoint | undefined,
    /** This incarnation's identity key: it signs every handshake. */
    private readonly identity: NodeIdentity,
    /** The local address dials leave from (see dialSourceOf). */
    private readonly dialFrom: string | undefined = undefined,
  ) {
    this.rejectLog = new RateLimitedLog(system.logger, () => Date.now(), 20);
    const ownAddresses = new Set([formatNodeAddress(system.node), ...config.aliases]);
    this.registry = new InboundRegistry(config.maxInboundConnections, config.maxInboundPerIdentity);
    this.scheduler = new InboundScheduler<InboundConnection>(config.inboundTurnBudgetMs, (c) =>
      this.isMemberConnection(c),
    );
    this.admission = new Admission(server, wss, config, {
      reject: (reason, detail, peer) => this.reject(reason, detail, peer),
      isKnownSource: (ip) => this.known.isKnownSource(ip),
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
        // unknown sources leave the reserved slots to members, seeds and contacts
        const handshakeSlots = slot.known
          ? config.maxPendingHandshakes
          : config.maxPendingHandshakes - config.reservedHandshakeSlots;
        if (this.pendingHandshakes >= handshakeSlots) {
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
        const connection = new InboundConnection(
          system,
          config,
          socket,
          remote,
          ownAddresses,
          {
            reject: (reason, detail, peer) => this.reject(reason, detail, peer),
            blackholed: (peer) => this.blackholed.has(peer),
            scheduler: this.scheduler,
            handshakeDone: (c) => {
              settle();
              if (!this.admitAuthenticated(c)) return;
              this.inbound.add(c);
              system.metrics.inc('doyen_wire_inbound_connections_total', 'Inbound connections accepted', {
                lane: c.lane ?? 'unknown',
              });
            },
            closed: (c) => {
              settle();
              this.inbound.delete(c);
              const origin = c.authenticatedAs;
              // a non-member gone for good: what it made this node hold goes (a member's stays until it leaves)
              if (this.registry.remove(c) && origin && !this.known.isMember(origin))
                system.nodeDisconnected(origin);
            },
          },
          identity,
        );
        void connection;
      },
    });
    // A key admitted after a connection claimed that member with another key: cut it now.
    system.peerKeys.onRecorded((member, publicKey) => {
      if (!config.checkPeerKeys) return;
      for (const c of this.inbound) {
        const origin = c.authenticatedAs;
        if (origin && origin.publicKey !== publicKey && nodeKey(origin) === member)
          c.close('wrong-key', `connection claimed member ${member} with another identity key`);
      }
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
    const identity = config.identityKey
      ? NodeIdentity.fromPem(config.identityKey, 'wire.identityKey')
      : NodeIdentity.generate();
    const system = new ActorSystem({ ...options, port, publicKey: identity.publicKey });
    const transport = new WsTransport(
      server,
      wss,
      system,
      config,
      tls,
      identity,
      dialSourceOf(options.bindHost ?? options.host),
    );
    tls?.attach(system);
    system.attachTransport(transport);
    // with mutual TLS and no secret the certificate is the admission: say that, not "anyone"
    if (!config.secret && tls)
      system.logger.info(
        { event: 'wire.tls-only' },
        'no cluster secret configured: only holders of a certificate from the cluster CA may join',
      );
    else if (!config.secret)
      system.logger.warn(
        { event: 'wire.no-secret' },
        'no cluster secret configured: any process that can reach this port may join',
      );
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
          this.identity,
          this.tls?.dialOptions,
          this.dialFrom,
          this.refused,
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

  /**
   * Calls `listener` with the address of every dial refused with ECONNREFUSED: no process listens
   * there (a kill -9 closes the port at once). A paused process still accepts and a cut-off one is
   * silent, so neither is reported. Returns the unsubscribe function.
   */
  onConnectionRefused(listener: (node: NodeAddress) => void): () => void {
    this.refusedListeners.add(listener);
    return () => this.refusedListeners.delete(listener);
  }

  private readonly refused = (node: NodeAddress): void => {
    if (this.closed) return;
    for (const listener of this.refusedListeners) listener(node);
  };

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

  /** Why the last dial to a node failed (either lane, system first); undefined once connected. */
  lastDialFailure(node: NodeAddress): string | undefined {
    const at = formatNodeAddress(node);
    return (
      this.associations.get(`system|${at}`)?.lastDialFailure ??
      this.associations.get(`user|${at}`)?.lastDialFailure
    );
  }

  /** Whether the outbound connection to a node on a lane has completed its handshake. */
  isConnected(node: NodeAddress, lane: Lane): boolean {
    return this.associations.get(`${lane}|${formatNodeAddress(node)}`)?.isReady ?? false;
  }

  /**
   * The cluster layer's view of whom this node knows: the current members' incarnations and the
   * addresses of seeds and discovered contacts. Their sources may use the reserved handshake
   * slots, and a member's death watches survive its reconnects. Call again whenever it changes.
   */
  setKnownPeers(members: readonly UniqueNodeAddress[], contacts: readonly NodeAddress[]): void {
    this.known.set(members, contacts);
  }

  /**
   * An authenticated connection takes its place under the caps: the system lane's lower frame
   * limit, at most `maxInboundPerIdentity` per identity and lane (its oldest is replaced), and
   * `maxInboundConnections` in all (beyond: closed with 4012). False when it was refused.
   */
  private admitAuthenticated(c: InboundConnection): boolean {
    if (c.lane === 'system') c.limitFrames(this.config.maxSystemFrameBytes);
    const admitted = this.registry.admit(c, (x) => this.isMemberConnection(x));
    const full = `this node takes ${this.config.maxInboundConnections} connections`;
    if (!admitted.ok) {
      c.close('too-many-connections', full);
      return false;
    }
    for (const old of admitted.evicted) {
      this.inbound.delete(old);
      old.close('too-many-connections', `${full}; a member's connection took this one's place`);
      const origin = old.authenticatedAs!;
      if (!this.registry.isConnected(origin)) this.system.nodeDisconnected(origin);
    }
    for (const old of admitted.replaced) {
      this.inbound.delete(old);
      this.system.metrics.inc(
        'doyen_wire_connections_replaced_total',
        'Inbound connections closed because the same identity and lane connected again',
      );
      old.close('replaced', 'replaced by a newer connection of the same identity');
    }
    return true;
  }

  private isMemberConnection(c: InboundConnection): boolean {
    const origin = c.authenticatedAs;
    return origin !== undefined && this.known.isMember(origin);
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
    // what is still queued becomes dead letters: the expected end of things, counted, not logged
    this.system.deadLetters.shutdownStarted();
    await Promise.all(
      [...this.associations.values()].map((a) => a.closeWhenFlushed(graceMs, 'node shutting down')),
    );
    this.associations.clear();
    for (const c of this.inbound) c.close('shutdown', 'node shutting down');
    for (const client of this.wss.clients) client.terminate();
    this.admission.close();
    this.scheduler.close();
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
