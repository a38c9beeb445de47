import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Cluster,
  type ClusterEvent,
  defaultClusterConfig,
  memberKey,
  nodeOf,
  Receptionist,
} from '@doyen/cluster';
import {
  type ActorRef,
  type ActorSystem,
  formatNodeAddress,
  InvalidConfigError,
  type Logger,
  type Message,
  type NodeAddress,
  nodeKey,
} from '@doyen/core';
import {
  ElectedCoordinator,
  EtcdLeaderStore,
  FileVoteStore,
  type LeaderStore,
  type VoteStore,
} from '@doyen/election';
import { ALLOCATOR_SINGLETON, allocatorLogic, PartitionService } from '@doyen/partitions';
import { type Sharding, startSharding } from '@doyen/sharding';
import { ClusterSingletons, LeasedOldestPlacement } from '@doyen/singleton';
import { WsTransport } from '@doyen/wire';
import { type ClusterBootstrapOptions, runClusterBootstrap } from './bootstrap/cluster-bootstrap.js';
import { DnsDiscovery, StaticDiscovery } from './bootstrap/discovery.js';
import { type SeedNodesView, seedNodesView } from './bootstrap/seed-nodes.js';
import { warnUnresolvableSeeds } from './bootstrap/seed-resolution.js';
import { attachConsole } from './console/console-routes.js';
import { ConsoleService } from './console/console-service.js';
import { CoordinatedShutdown, leavePhaseTimeoutMs } from './coordinated-shutdown.js';
import type { DoyenNode, StopReason } from './doyen-node.js';
import { faultInjectionRoute } from './fault-injection.js';
import { HealthChecks } from './health-checks.js';
import { loadOrCreateIdentityKey } from './identity-key-file.js';
import { NodeClusterEvents, NodeReceptionist } from './incarnation-subscriptions.js';
import { attachLocalInspector, type LocalInspector } from './inspector/local-inspector.js';
import { inspectorUrlOf, loadStatelyInspect, StatelyBridge } from './inspector/stately.js';
import { DEFAULT_HTTP_HOST, ManagementServer } from './management-http.js';
import { refForPath } from './member-path-ref.js';
import { createNodeLogger, withNodeField } from './node-logger.js';
import { retirePartitions } from './retire-partitions.js';
import { handleShutdownSignals } from './signal-handlers.js';

/** Hazelcast's default partition count. */
export const DEFAULT_PARTITION_COUNT = 271;

import {
  clusterSecretOf,
  DISCOVERY_DEFAULTS,
  type IncarnationInfo,
  type NodeConfig,
  normalizeOrigin,
  validateNodeConfig,
} from './node-config.js';

interface Incarnation {
  readonly transport: WsTransport;
  readonly cluster: Cluster;
  readonly singletons: ClusterSingletons;
  readonly receptionist: Receptionist;
  readonly partitions: PartitionService | undefined;
  readonly sharding: Sharding | undefined;
  readonly coordinator: ElectedCoordinator | undefined;
  readonly leaderStore: LeaderStore | undefined;
}

/**
 * Runs a node across incarnations: a node that is downed (with `onDowned: 'restart'`) or merged
 * into a larger sub-cluster closes its transport and starts again at the same address with a
 * new uid, joining through the members it knew and never forming a cluster of its own.
 */
class NodeRunner implements DoyenNode {
  /** Undefined only while the cluster bootstrap is still deciding (discovery). */
  private current!: Incarnation;
  /** True until discovery decided whom to join (the management port answers, the rest waits). */
  bootstrapping = false;
  /** Aborted when the node stops, so a bootstrap still probing ends. */
  readonly stopSignal = new AbortController();
  private stopping: Promise<void> | undefined;
  private restarting = false;
  /**
   * The members the last incarnation that held a membership knew, by address: the restarted
   * incarnation's `lastMembers`, the majority its first seed needs before re-forming.
   */
  private lastMembers: readonly NodeAddress[] | undefined;
  private finish: (reason: StopReason) => void = () => {};
  readonly closed = new Promise<StopReason>((resolve) => (this.finish = resolve));
  http: ManagementServer | undefined;
  localInspector: LocalInspector | undefined;
  /** The cluster console (`GET /console`), with the management endpoint unless `console.enabled` is false. */
  console: ConsoleService | undefined;
  /** Sends every incarnation's machines to the Stately inspector (`inspect` in the config). */
  readonly stately: StatelyBridge | undefined;
  incarnations = 0;
  readonly receptionist = new NodeReceptionist();
  private readonly clusterEvents: NodeClusterEvents;
  /** quorum: one vote store for every incarnation, so a restart never votes twice. */
  private readonly voteStore: VoteStore | undefined;
  readonly coordinatedShutdown: CoordinatedShutdown;
  readonly health = new HealthChecks();
  /** The PEM of the stable identity key (`identityKeyFile`), the same for every incarnation. */
  private readonly identityKey: string | undefined;

  constructor(
    private readonly config: NodeConfig,
    readonly logger: Logger,
  ) {
    this.clusterEvents = new NodeClusterEvents(logger);
    this.identityKey = config.identityKeyFile ? loadOrCreateIdentityKey(config.identityKeyFile) : undefined;
    const url = inspectorUrlOf(config.inspect);
    if (url) this.stately = new StatelyBridge({ url, logger });
    this.coordinatedShutdown = new CoordinatedShutdown(logger, {
      leave: leavePhaseTimeoutMs(
        config.clusterOptions?.leaveTimeoutMs ?? defaultClusterConfig.leaveTimeoutMs,
      ),
      ...config.shutdown?.phaseTimeoutsMs,
    });
    this.addShutdownTasks();
    if (config.coordinator === 'quorum') {
      const path =
        config.election?.voteFile ??
        join(
          tmpdir(),
          `doyen-vote-${config.cluster}-${config.host.replace(/[^A-Za-z0-9.-]/g, '_')}-${config.port}.json`,
        );
      this.voteStore = new FileVoteStore(path);
      this.voteStore.load(); // a corrupt file fails startNode before anything is bound
      logger.info({ event: 'election.vote-file', path }, `quorum coordinator: votes kept in ${path}`);
    }
  }

  get transport(): WsTransport {
    return this.current.transport;
  }

  get system(): ActorSystem {
    return this.current.transport.system;
  }

  get cluster(): Cluster {
    return this.current.cluster;
  }

  get singletons(): ClusterSingletons {
    return this.current.singletons;
  }

  get partitions(): PartitionService | undefined {
    return this.current.partitions;
  }

  get sharding(): Sharding | undefined {
    return this.current.sharding;
  }

  get coordinator(): ElectedCoordinator | undefined {
    return this.current.coordinator;
  }

  refFor<M extends Message = Message>(address: string): ActorRef<M> {
    return refForPath<M>(this, address);
  }

  subscribe(listener: (event: ClusterEvent) => void): () => void {
    return this.clusterEvents.subscribe(listener);
  }

  /** `GET /bootstrap/seed-nodes`: the up members once this node is up, none before. */
  seedNodes(): SeedNodesView {
    const self = { host: this.config.host, port: this.config.port };
    return seedNodesView(this.bootstrapping ? undefined : this.current?.cluster, this.config.cluster, self);
  }

  /** doyen's own tasks of the coordinated shutdown; the app adds its own beside them. */
  private addShutdownTasks(): void {
    const tasks = this.coordinatedShutdown;
    // before the bootstrap decided there is no cluster to leave and nothing to drain
    const started = () => this.current !== undefined;
    // RETIRE: while still up, this node asks for a table without it and hands its partitions
    // off (entities, state, held messages) before the leave ends its membership and owner lease
    tasks.addTask('before-leave', 'doyen.partitions-retired', async () => {
      if (!started()) return;
      const incarnation = this.current;
      await retirePartitions(
        { system: incarnation.transport.system, ...incarnation },
        {
          ...(this.config.partitions?.role !== undefined ? { role: this.config.partitions.role } : {}),
          // the margin lets the step log before the phase gives up on it
          timeoutMs: Math.max(0, tasks.timeoutOf('before-leave') - 250),
          current: () => this.current === incarnation,
        },
      );
    });
    tasks.addTask('leave', 'doyen.leave-cluster', () =>
      started() ? this.current.cluster.leave() : undefined,
    );
    tasks.addTask('hand-over', 'doyen.singletons-handed-over', () =>
      until(() => !started() || !this.current.singletons.list().some((s) => s.runsHere)),
    );
    tasks.addTask('drain', 'doyen.drain-user-mailboxes', () =>
      until(() => !started() || userBacklog(this.system) === 0),
    );
    tasks.addTask('stop-actors', 'doyen.stop-user-actors', () => {
      if (!started()) return;
      const system = this.system;
      for (const path of topLevelUserActors(system)) {
        const ref = system.lookup(path);
        if (ref) system.stop(ref);
      }
    });
    tasks.addTask('close', 'doyen.close', () => this.stop('shutdown'));
  }

  async startIncarnation(
    seeds: readonly NodeAddress[],
    mayFormCluster: boolean,
    reason: IncarnationInfo['reason'] = 'start',
  ): Promise<void> {
    const config = this.config;
    let label = `${config.host}:${config.port}#`;
    const transport = await WsTransport.start({
      cluster: config.cluster,
      host: config.host,
      port: config.port,
      logger: this.logger,
      wire: {
        ...config.wire,
        secret: clusterSecretOf(config) ?? '',
        ...(this.identityKey === undefined ? {} : { identityKey: this.identityKey }),
      },
      ...(config.bindHost ? { bindHost: config.bindHost } : {}),
      ...(this.stately ? { inspect: this.stately.observerFor(() => label) } : {}),
    });
    label = incarnationLabel(transport.system);
    const cluster = Cluster.start(
      transport.system,
      {
        ...config.clusterOptions,
        seeds,
        mayFormCluster: mayFormCluster && (config.clusterOptions?.mayFormCluster ?? true),
        // every incarnation keeps the operator's seed list: after a total downing its first
        // seed, restarted like all the others, may form again (see ClusterConfig.formingSeeds)
        ...formingSeedsOption(config),
        ...(this.lastMembers === undefined ? {} : { lastMembers: this.lastMembers }),
        roles: config.roles ?? [],
        ...(config.name ? { name: config.name } : {}),
      },
      {
        onMemberRemoved: (node) => transport.forget(node),
        onDowned: (known) => void this.onDowned(known),
        onRejoin: (rejoinSeeds, reason) => void this.restart(rejoinSeeds, reason),
      },
    );
    // members, seeds and contacts may use the reserved handshake slots; a member's watches outlive its reconnects
    transport.setKnownPeers([], seeds);
    cluster.subscribeMembership((m) => transport.setKnownPeers(m.members.map(nodeOf), seeds));
    const { coordinator, leaderStore } = this.electedCoordinator(transport.system, cluster);
    const singletons = new ClusterSingletons(
      transport.system,
      cluster,
      coordinator ?? new LeasedOldestPlacement(transport.system, cluster, config.hostLease),
    );
    const receptionist = Receptionist.start(transport.system, cluster);
    const count = config.partitions?.count ?? DEFAULT_PARTITION_COUNT;
    let partitions: PartitionService | undefined;
    if (count > 0) {
      const role = config.partitions?.role;
      // tables are adopted only from where the allocator runs, as this node's placement sees it
      partitions = new PartitionService(transport.system, cluster, count, {
        allocatorHost: (m) => {
          const host = singletons.placement.hostOf(m, role);
          return host && memberKey(host);
        },
      });
      singletons.register(
        ALLOCATOR_SINGLETON,
        allocatorLogic({
          system: transport.system,
          cluster,
          service: partitions,
          options: {
            partitionCount: count,
            ...(config.partitions?.backupCount !== undefined
              ? { backupCount: config.partitions.backupCount }
              : {}),
            ...(config.partitions?.role !== undefined ? { role: config.partitions.role } : {}),
          },
          ackTimeoutMs: 2000,
        }),
        config.partitions?.role !== undefined ? { role: config.partitions.role } : {},
      );
    }
    // sharded entities run on the partitions: the app registers its types in `setup`
    const sharding = partitions
      ? startSharding(transport.system, cluster, partitions, {
          ...(config.partitions?.role !== undefined ? { partitionRole: config.partitions.role } : {}),
          ...(config.hostLease ? { hostLease: config.hostLease } : {}),
          ...(config.sharding?.remember ? { remember: config.sharding.remember } : {}),
          // a fenced owner may never run an entity again: this incarnation ends as a downed one does
          onOwnerFenced: () => void this.onDowned(cluster.knownAddresses()),
        })
      : undefined;
    this.current = {
      transport,
      cluster,
      singletons,
      receptionist,
      partitions,
      sharding,
      coordinator,
      leaderStore,
    };
    this.incarnations++;
    // before setup: what the app subscribed to on the node hears this incarnation from its start
    this.clusterEvents.attach(cluster);
    this.receptionist.attach(receptionist);
    if (config.setup) {
      const incarnation = { number: this.incarnations, reason };
      this.logger.info(
        { event: 'node.setup', incarnation: incarnation.number, reason },
        `running the app's setup for incarnation ${incarnation.number} (${reason})`,
      );
      await config.setup(this, incarnation);
    }
  }

  private electedCoordinator(
    system: ActorSystem,
    cluster: Cluster,
  ): { coordinator: ElectedCoordinator | undefined; leaderStore: LeaderStore | undefined } {
    const { coordinator: mode = 'emergent', election } = this.config;
    if (mode === 'emergent') return { coordinator: undefined, leaderStore: undefined };
    const etcd = election?.etcd;
    const leaderStore =
      mode === 'etcd' && etcd
        ? new EtcdLeaderStore({
            endpoints: [...etcd.endpoints],
            cluster: this.config.cluster,
            name: 'coordinator',
            ttlMs: etcd.ttlMs ?? 5000,
            timeoutMs: etcd.timeoutMs ?? 2000,
            logger: system.logger,
          })
        : undefined;
    const coordinator = new ElectedCoordinator(system, cluster, {
      mode,
      ...(election?.timing ? { timing: election.timing } : {}),
      ...(this.voteStore ? { voteStore: this.voteStore } : {}),
      ...(leaderStore ? { leaderStore } : {}),
    });
    return { coordinator, leaderStore };
  }

  /**
   * Ends an incarnation's election. Resigning frees the etcd key at once; without it (a crash, as
   * `close()` means) the key lapses after its TTL.
   */
  private async stopCoordinator(incarnation: Incarnation, resign = true): Promise<void> {
    incarnation.coordinator?.stop();
    if (incarnation.leaderStore) {
      if (resign) await incarnation.leaderStore.resign(incarnation.transport.system.nodeName).catch(() => {});
      await incarnation.leaderStore.close().catch(() => {});
    }
  }

  private async onDowned(known: readonly NodeAddress[]): Promise<void> {
    if ((this.config.onDowned ?? 'restart') === 'exit' || known.length === 0) {
      this.logger.warn({ event: 'node.downed-exit' }, 'downed: stopping this node');
      await this.stop('downed');
      return;
    }
    await this.restart(known, 'downed');
  }

  private async restart(seeds: readonly NodeAddress[], reason: 'downed' | 'merge'): Promise<void> {
    if (this.restarting || this.stopping) return;
    // a node in its coordinated shutdown goes on leaving: a new incarnation would join, take
    // partitions and die with the process moments later, as a crash does
    if (this.leaving) {
      this.logger.info(
        { event: 'node.restart-skipped', reason, because: 'shutting-down' },
        `${reason} while shutting down: not restarting as a new incarnation`,
      );
      return;
    }
    this.restarting = true;
    const old = this.current;
    // an incarnation that never held a membership knew nobody new: the one before it did
    const known = old.cluster.knownAddresses();
    if (known.length > 0) this.lastMembers = known;
    this.logger.warn(
      {
        event: 'node.restart',
        reason,
        seeds: seeds.map((s) => `${s.host}:${s.port}`),
        uid: old.transport.system.node.uid,
      },
      `restarting as a new incarnation (${reason})`,
    );
    try {
      old.sharding?.stop();
      old.cluster.stop();
      old.receptionist.stop();
      await this.stopCoordinator(old);
      await old.transport.close();
      this.stately?.forget(incarnationLabel(old.transport.system));
      await this.startIncarnation(seeds, false, reason);
    } catch (error) {
      this.logger.error(
        { event: this.current === old ? 'node.restart-failed' : 'node.setup-failed', err: error },
        this.current === old
          ? 'restart failed: stopping'
          : "the app's setup failed in the new incarnation: stopping",
      );
      await this.stop('closed');
    } finally {
      this.restarting = false;
    }
  }

  private stop(reason: StopReason): Promise<void> {
    this.stopping ??= (async () => {
      this.stopSignal.abort();
      const current = this.current as Incarnation | undefined;
      current?.sharding?.stop();
      current?.cluster.stop();
      // a crash (`closed`) does not resign: the lease lapses after its TTL, as a crash would
      if (current) await this.stopCoordinator(current, reason !== 'closed');
      this.localInspector?.close();
      this.console?.close();
      await this.http?.close();
      // `closed` is what a crash looks like: no grace for queued messages
      await current?.transport.close(reason === 'closed' ? 0 : undefined);
      this.stately?.stop();
      this.finish(reason);
    })();
    return this.stopping;
  }

  close(): Promise<void> {
    return this.stop('closed');
  }

  private leaving: Promise<void> | undefined;

  shutdown(reason = 'shutdown'): Promise<void> {
    this.leaving ??= (async () => {
      this.logger.info({ event: 'node.shutdown', reason }, 'leaving the cluster');
      // messages to actors and members going away are the expected end of things: not logged
      (this.current as Incarnation | undefined)?.transport.system.deadLetters.shutdownStarted();
      await this.coordinatedShutdown.run(reason);
      // the close phase may have timed out: the node still stops
      await this.stop('shutdown');
    })();
    return this.leaving;
  }
}

/** Static seeds where the node may form a cluster at all (discovery finds its own way). */
function formingSeedsOption(config: NodeConfig): { formingSeeds?: readonly NodeAddress[] } {
  if (config.clusterOptions?.mayFormCluster === false) return {};
  const seeds = config.clusterOptions?.formingSeeds ?? (config.discovery ? undefined : config.seeds);
  return seeds === undefined ? {} : { formingSeeds: seeds };
}

/** Polls `done` until it holds; the phase's timeout bounds it. */
async function until(done: () => boolean, intervalMs = 20): Promise<void> {
  while (!done()) await new Promise((resolve) => setTimeout(resolve, intervalMs));
}

/** The app's actors directly under `/user` (stopping them stops their children). */
function topLevelUserActors(system: ActorSystem): string[] {
  return system.actorPaths('/user/').filter((path) => path.split('/').length === 3);
}

/** Messages waiting in the mailboxes of the app's actors. */
function userBacklog(system: ActorSystem): number {
  let total = 0;
  for (const path of system.actorPaths('/user/')) {
    const ref = system.lookup(path);
    if (ref) total += system.mailboxSize(ref);
  }
  return total;
}

/** The host a person opens the management pages at: the bound address, or the node's when bound to all. */
function pageHost(config: NodeConfig): string {
  const host = config.httpHost ?? DEFAULT_HTTP_HOST;
  if (host === '0.0.0.0' || host === '::') return config.host;
  return host.includes(':') ? `[${host}]` : host;
}

/** Reads the management certificate and key before anything is bound, so a bad path fails the start. */
function readHttpTls(files: NonNullable<NodeConfig['httpTls']>): { cert: Buffer; key: Buffer } {
  const read = (path: string, what: string) => {
    try {
      return readFileSync(path);
    } catch (error) {
      throw new InvalidConfigError(`cannot read the management ${what} ${path}: ${(error as Error).message}`);
    }
  };
  return {
    cert: read(files.certFile, 'certificate (--http-tls-cert)'),
    key: read(files.keyFile, 'key (--http-tls-key)'),
  };
}

/** Names an incarnation for the Stately inspector: `host:port#uid`. */
function incarnationLabel(system: ActorSystem): string {
  return nodeKey(system.node);
}

/** Serves HTTP management (when `httpPort` is set), with fault injection and the local inspector. */
async function startManagement(
  node: NodeRunner,
  config: NodeConfig,
  httpTls: { cert: Buffer; key: Buffer } | undefined,
  logger: Logger,
): Promise<void> {
  if (config.httpPort !== undefined) {
    node.http = await ManagementServer.start({
      host: config.httpHost ?? DEFAULT_HTTP_HOST,
      port: config.httpPort,
      node,
      onLeave: () => void node.shutdown(),
      ...(config.httpToken ? { token: config.httpToken } : {}),
      allowedOrigins: (config.httpAllowedOrigins ?? []).map(normalizeOrigin),
      ...(httpTls ? { tls: httpTls } : {}),
    });
    logger.info(
      {
        event: 'http.listening',
        host: node.http.address.address,
        port: node.http.port,
        scheme: node.http.scheme,
        readOnly: node.http.policy.token === undefined,
      },
      `management on ${node.http.scheme}://${node.http.address.address}:${node.http.port}${node.http.policy.token === undefined ? ' (read-only: no management token)' : ''}`,
    );
    if (config.faultInjection) {
      node.http.addRoute(faultInjectionRoute(() => node.transport, logger));
      logger.warn(
        { event: 'fault.enabled' },
        'fault injection is enabled: POST /fault/blackhole, /fault/heal, /fault/stall',
      );
    }
    node.localInspector = attachLocalInspector(node.http, node);
  }
  const page = node.http
    ? `${node.http.scheme}://${pageHost(config)}:${node.http.port}/inspector`
    : undefined;
  if (node.stately) {
    logger.info(
      { event: 'inspect.enabled', url: node.stately.url, open: node.stately.pageUrl, page },
      `Stately inspector: machines go to ${node.stately.url}; open ${node.stately.pageUrl} (run \`doyen inspector\` there; it loads stately.ai, online only)${page ? `; local inspector: ${page}` : ''}`,
    );
  } else if (page) {
    logger.debug({ event: 'inspector.page', page }, `local inspector: ${page}`);
  }
}

/** The cluster console (its page on the management endpoint), once the node has its first incarnation. */
function startConsole(node: NodeRunner, config: NodeConfig, logger: Logger): void {
  // every member answers the serving nodes' subscriptions, with a management endpoint or without
  if (config.console?.enabled === false) return;
  const { historyMs, historyBytes } = config.console ?? {};
  node.console = new ConsoleService(node, logger, {
    ...(historyMs !== undefined ? { historyMs } : {}),
    ...(historyBytes !== undefined ? { historyBytes } : {}),
  });
  if (node.http) attachConsole(node.http, node.console);
}

/** The bootstrap of a node with `discovery`: DNS contact points on the management port, Akka's defaults. */
function bootstrapOptionsOf(config: NodeConfig, node: NodeRunner, logger: Logger): ClusterBootstrapOptions {
  const d = config.discovery!;
  const httpPort = node.http!.port;
  const intervalMs = d.intervalMs ?? DISCOVERY_DEFAULTS.intervalMs;
  return {
    discovery: new DnsDiscovery({
      service: d.service,
      port: d.contactPointPort ?? httpPort,
      ...(d.dnsServers ? { servers: d.dnsServers } : {}),
      timeoutMs: Math.max(500, intervalMs),
      logger,
    }),
    settings: {
      self: { host: config.host, port: httpPort },
      requiredContactPoints: d.requiredContactPoints ?? DISCOVERY_DEFAULTS.requiredContactPoints,
      stableMarginMs: d.stableMarginMs ?? DISCOVERY_DEFAULTS.stableMarginMs,
      probeFreshMs: 3 * intervalMs,
      maxSeedNodes: 5,
    },
    clusterName: config.cluster,
    scheme: node.http!.scheme,
    intervalMs,
    probeTimeoutMs: Math.max(500, intervalMs),
    logger,
    signal: node.stopSignal.signal,
  };
}

/**
 * Starts a node: binds the transport, starts joining, serves HTTP management, and resolves
 * once the node is up. Rejects with `JoinFailedError` when no seed lets it in.
 */
export async function startNode(
  input: NodeConfig,
  options: {
    logger?: Logger;
    waitUntilUp?: boolean;
    /**
     * Install SIGTERM/SIGINT handlers that run the coordinated shutdown and exit 0, as
     * `doyen node` does. Off by default: the app owns its process's signals.
     */
    handleSignals?: boolean;
  } = {},
): Promise<DoyenNode> {
  const config = validateNodeConfig(input);
  // every line names the node, also those written before its actor system exists (port 0: the system names it)
  const nodeName =
    config.port === 0 ? undefined : formatNodeAddress({ host: config.host, port: config.port });
  const given = options.logger ?? createNodeLogger({ level: config.logLevel ?? 'info' });
  const logger = nodeName ? withNodeField(given, nodeName) : given;
  const httpTls = config.httpTls ? readHttpTls(config.httpTls) : undefined;
  if (clusterSecretOf(config) === undefined && config.wire?.tls === undefined) {
    logger.warn(
      { event: 'wire.insecure', host: config.host, port: config.port },
      'INSECURE: no cluster secret and no TLS (--insecure): any process that can reach this port can join the cluster, read its traffic and send as a member',
    );
  }
  if (inspectorUrlOf(config.inspect)) await loadStatelyInspect();
  const node = new NodeRunner(config, logger);
  try {
    if (config.discovery) {
      // the management port answers the others' probes while this node looks for its cluster
      node.bootstrapping = true;
      await startManagement(node, config, httpTls, logger);
      const outcome = await runClusterBootstrap(bootstrapOptionsOf(config, node, logger));
      const self = { host: config.host, port: config.port };
      await node.startIncarnation(
        outcome.kind === 'form' ? [self] : outcome.seedNodes,
        outcome.kind === 'form',
      );
      node.bootstrapping = false;
    } else {
      // static discovery: the seed list, joined directly (the first seed may form the cluster)
      const seeds = await new StaticDiscovery(config.seeds ?? []).lookup();
      void warnUnresolvableSeeds(seeds, { host: config.host, port: config.port }, logger);
      await node.startIncarnation(seeds, true);
      await startManagement(node, config, httpTls, logger);
    }
    startConsole(node, config, logger);
    if (options.waitUntilUp !== false) await node.cluster.whenUp();
  } catch (error) {
    // nothing bound, a failed bootstrap, or the app's setup threw: close what was started
    await node.close();
    throw error;
  }
  if (options.handleSignals) handleShutdownSignals(node, logger);
  return node;
}
