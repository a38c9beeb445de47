import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { addressOfKey, type Cluster, type Member, memberKey } from '@doyen/cluster';
import { type ActorSystem, RateLimitedLog } from '@doyen/core';
import type { ElectedCoordinator } from '@doyen/election';
import type { SingletonLeaseView } from '@doyen/singleton';
import { SEED_NODES_PATH } from './bootstrap/seed-nodes.js';
import { sendJson as json } from './http-json.js';
import {
  changesState,
  crossSiteRefusalOf,
  hostRefusalOf,
  isLoopback,
  type ManagementPolicy,
  managementPolicy,
  ownOrigins,
  type RefusalReason,
  refusalOf,
} from './management-guard.js';
import type { ManagedNode, Route, UpgradeRoute } from './management-route.js';
import { EVENT_STREAM_PATHS, membersRoute } from './members-routes.js';
import { shardsRoute } from './shards-route.js';

/** Where management listens unless told otherwise: only local clients reach it. */
export const DEFAULT_HTTP_HOST = '127.0.0.1';

/** One row of `GET /cluster`. */
export interface MemberView {
  readonly address: string;
  readonly uid: string;
  readonly name: string;
  readonly age: number;
  readonly status: Member['status'];
  readonly reachable: boolean;
  readonly roles: readonly string[];
}

export interface ClusterView {
  readonly self: string;
  readonly uid: string;
  readonly status: string;
  readonly coordinator: string | null;
  /** With `coordinator: 'quorum' | 'etcd'`: this node's view of the election. */
  readonly election?: {
    readonly mode: string;
    readonly role: string;
    readonly leader: string | null;
    readonly term: number;
    readonly acting: boolean;
  };
  readonly version: number;
  readonly members: readonly MemberView[];
}

/** One entry of `GET /singletons`. */
export interface SingletonView {
  readonly name: string;
  /** `host:port` of the member it runs on, as this node sees it. */
  readonly node: string | null;
  readonly runsHere: boolean;
  /** The singleton manager's state on this node (its xstate state value). */
  readonly state: unknown;
  /** Emergent placement: the host lease as this node knows it. */
  readonly lease?: SingletonLeaseView;
}

/** `GET /partitions`. */
export interface PartitionsView {
  readonly version: number;
  readonly partitionCount: number;
  /** `host:port` per partition, `''` when unassigned. */
  readonly owners: readonly string[];
  readonly counts: Readonly<Record<string, number>>;
  readonly backups: readonly (readonly string[])[];
}

export function clusterView(cluster: Cluster, elected?: ElectedCoordinator): ClusterView {
  const state = cluster.state();
  const m = state.membership;
  const unreachable = new Set(m?.unreachable ?? []);
  const rows: MemberView[] = [];
  for (const x of m?.members ?? []) {
    rows.push({ ...pick(x), reachable: !unreachable.has(memberKey(x)) });
  }
  for (const x of m?.failed ?? []) rows.push({ ...pick(x), reachable: false });
  return {
    self: cluster.self.address,
    uid: cluster.self.uid,
    status: state.status,
    coordinator: elected ? (elected.coordinator() ?? null) : (state.coordinator?.address ?? null),
    ...(elected ? { election: electionView(elected) } : {}),
    version: m?.version ?? 0,
    members: rows,
  };
}

function electionView(elected: ElectedCoordinator): NonNullable<ClusterView['election']> {
  const v = elected.view();
  return { mode: elected.kind, role: v.role, leader: v.leader ?? null, term: v.term, acting: v.acting };
}

function pick(x: Member) {
  return { address: x.address, uid: x.uid, name: x.name, age: x.age, status: x.status, roles: x.roles };
}

/** Akka Management's short health paths, answered exactly as the long ones. */
const HEALTH_ALIASES: ReadonlyMap<string, string> = new Map([
  ['/ready', '/health/ready'],
  ['/alive', '/health/alive'],
]);

/** Before the node is in a cluster: alive, not ready, nothing else yet. */
function answerWhileBootstrapping(response: ServerResponse, path: string, method: string): void {
  if (method === 'GET' && path === '/health/alive') json(response, 200, { alive: true });
  else if (method === 'GET' && path === '/health/ready')
    json(response, 503, { ready: false, status: 'bootstrapping' });
  else json(response, 503, { error: 'bootstrapping: not in a cluster yet' });
}

export interface ManagementServerOptions {
  /** Interface to bind (default 127.0.0.1). */
  readonly host?: string;
  readonly port: number;
  readonly node: ManagedNode;
  readonly onLeave: () => void;
  /** Bearer token for state-changing requests; without one they are all refused (read-only). */
  readonly token?: string;
  /** Browser origins allowed besides the server's own loopback ones (`scheme://host[:port]`). */
  readonly allowedOrigins?: readonly string[];
  /** Serve HTTPS with this PEM certificate and key. */
  readonly tls?: { readonly cert: string | Buffer; readonly key: string | Buffer };
}

/**
 * The management endpoint: cluster state, health, metrics and operator actions. Read-only
 * routes are GET; changes are POST. Unknown routes get 404, wrong methods 405, never a crash.
 * Every request that is not GET or HEAD — the built-in leave and down, and whatever routes are
 * added (fault injection) — must pass the guard first: same-site, the bearer token, JSON.
 */
export class ManagementServer {
  private readonly routes: Route[] = [];
  private readonly upgradeRoutes: UpgradeRoute[] = [];
  private readonly upgraded = new Set<Duplex>();
  private refusalLog: RateLimitedLog | undefined;
  private refusalLogOf: ActorSystem | undefined;

  private constructor(
    private readonly server: Server,
    readonly port: number,
    /** `http` or `https`. */
    readonly scheme: 'http' | 'https',
    readonly policy: ManagementPolicy,
    private readonly node: ManagedNode,
  ) {
    server.on('upgrade', (request: IncomingMessage, socket: Socket, head: Buffer) => {
      this.upgraded.add(socket);
      socket.once('close', () => this.upgraded.delete(socket));
      socket.on('error', () => socket.destroy());
      try {
        if (!this.node.bootstrapping)
          for (const route of this.upgradeRoutes) if (route(request, socket, head)) return;
      } catch {
        socket.destroy();
        return;
      }
      socket.end('HTTP/1.1 404 Not Found\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
    });
  }

  static async start(options: ManagementServerOptions): Promise<ManagementServer> {
    let self: ManagementServer | undefined;
    const members = membersRoute(options.node, options.onLeave);
    const shards = shardsRoute(options.node);
    const listener = (request: IncomingMessage, response: ServerResponse) => {
      void handle(request, response).catch((error: unknown) => {
        if (!options.node.bootstrapping)
          options.node.system.logger.error({ event: 'http.error', err: error }, 'management request failed');
        if (!response.headersSent) json(response, 500, { error: 'internal error' });
        else response.destroy();
      });
    };
    const server: Server = options.tls
      ? (createHttpsServer({ cert: options.tls.cert, key: options.tls.key }, listener) as unknown as Server)
      : createServer(listener);
    async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
      const url = new URL(request.url ?? '/', 'http://localhost');
      const trimmed = url.pathname.replace(/\/+$/, '') || '/';
      const path = HEALTH_ALIASES.get(trimmed) ?? trimmed;
      const method = request.method ?? 'GET';
      if (!self) return json(response, 503, { error: 'starting' });
      const wrongHost = hostRefusalOf(request.headers, self.policy);
      if (wrongHost) {
        self.refused(request, wrongHost.reason);
        return json(response, wrongHost.status, { error: wrongHost.error });
      }
      if (path === SEED_NODES_PATH && options.node.seedNodes) {
        if (method !== 'GET') return json(response, 405, { error: `${method} not allowed on ${path}` });
        return json(response, 200, options.node.seedNodes());
      }
      if (options.node.bootstrapping) return answerWhileBootstrapping(response, path, method);
      const { system, cluster } = options.node;
      // an event stream is held open: refused cross-site like a change, so no page can hold them all
      const streams = EVENT_STREAM_PATHS.includes(path);
      if (changesState(method) || streams) {
        const refusal = streams
          ? crossSiteRefusalOf(request.headers, self.policy)
          : refusalOf(request.headers, self.policy);
        if (refusal) {
          self.refused(request, refusal.reason);
          const headers: Record<string, string> =
            refusal.status === 401 ? { 'www-authenticate': 'Bearer' } : {};
          return json(response, refusal.status, { error: refusal.error }, headers);
        }
      }
      for (const route of self?.routes ?? []) if (await route(request, response, url)) return;
      if (await members(request, response, url)) return;
      if (await shards(request, response, url)) return;
      if (path === '/cluster' && method === 'GET')
        return json(response, 200, clusterView(cluster, options.node.coordinator));
      if (path === '/health/alive' && method === 'GET') return json(response, 200, { alive: true });
      if (path === '/singletons' && method === 'GET') {
        const singletons = options.node.singletons?.list() ?? [];
        const views: SingletonView[] = singletons.map((x) => ({
          name: x.name,
          node: x.oldest ?? null,
          runsHere: x.runsHere,
          state: x.managerState,
          ...(x.lease ? { lease: x.lease } : {}),
        }));
        return json(response, 200, views);
      }
      if (path === '/partitions' && method === 'GET') {
        const table = options.node.partitions?.table();
        if (!options.node.partitions)
          return json(response, 404, { error: 'partitions are off on this node' });
        const owners = (table?.owners ?? []).map((k) => (k ? addressOfKey(k) : ''));
        const counts: Record<string, number> = {};
        for (const o of owners) if (o) counts[o] = (counts[o] ?? 0) + 1;
        const view: PartitionsView = {
          version: table?.version ?? 0,
          partitionCount: options.node.partitions.partitionCount,
          owners,
          counts,
          backups: (table?.backups ?? []).map((b) => b.map(addressOfKey)),
        };
        return json(response, 200, view);
      }
      if (path === '/health/ready' && method === 'GET') {
        const status = cluster.state().status;
        const failing = status === 'up' ? ((await options.node.health?.notReady()) ?? []) : [];
        const ready = status === 'up' && failing.length === 0;
        return json(response, ready ? 200 : 503, { ready, status, ...(failing.length ? { failing } : {}) });
      }
      if (path === '/metrics' && method === 'GET') {
        const s = cluster.state();
        system.metrics.set(
          'doyen_cluster_members',
          'Members in this node view',
          s.membership?.members.length ?? 0,
        );
        system.metrics.set(
          'doyen_cluster_unreachable',
          'Unreachable members',
          s.membership?.unreachable.length ?? 0,
        );
        system.metrics.set('doyen_cluster_version', 'Membership version', s.membership?.version ?? 0);
        const elected = options.node.coordinator;
        const coordinating = elected ? elected.view().acting : s.isCoordinator;
        system.metrics.set('doyen_cluster_is_coordinator', '1 on the coordinator', coordinating ? 1 : 0);
        const text = await system.metrics.render();
        response.writeHead(200, { 'content-type': system.metrics.contentType, 'cache-control': 'no-store' });
        response.end(text);
        return;
      }
      if (path === '/cluster/leave' && method === 'POST') {
        options.onLeave();
        return json(response, 202, { leaving: true });
      }
      const down = /^\/cluster\/down\/([^/]+)$/.exec(path);
      if (down && method === 'POST') {
        const target = decodeURIComponent(down[1]!);
        const known = cluster
          .state()
          .membership?.members.some((m) => m.address === target || memberKey(m) === target);
        if (!known) return json(response, 404, { error: `no member ${target}` });
        cluster.down(target);
        return json(response, 202, { downing: target });
      }
      const known = [
        '/cluster',
        '/health/alive',
        '/health/ready',
        '/metrics',
        '/cluster/leave',
        '/singletons',
        '/partitions',
      ];
      if (known.includes(path) || down)
        return json(response, 405, { error: `${method} not allowed on ${path}` });
      return json(response, 404, { error: `no route ${path}` });
    }
    const host = options.host ?? DEFAULT_HTTP_HOST;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port, host, () => resolve());
    });
    const port = (server.address() as AddressInfo).port;
    const scheme = options.tls ? 'https' : 'http';
    const origins = [...ownOrigins(scheme, host, port), ...(options.allowedOrigins ?? [])];
    const policy = managementPolicy(options.token, origins, isLoopback(host));
    self = new ManagementServer(server, port, scheme, policy, options.node);
    return self;
  }

  /** The address the server is bound to (`127.0.0.1` unless told otherwise). */
  get address(): AddressInfo {
    return this.server.address() as AddressInfo;
  }

  /** Whether a browser page of `origin` may use this server (its own loopback origins, and the allowed ones). */
  allowsOrigin(origin: string): boolean {
    return this.policy.allowsOrigin(origin);
  }

  /** Logs (rate-limited, never a header value but the origin) and counts a refused request. */
  refused(request: IncomingMessage, reason: RefusalReason): void {
    if (this.node.bootstrapping) return; // no actor system to log and count with yet
    const system = this.node.system;
    if (this.refusalLogOf !== system) {
      this.refusalLog = new RateLimitedLog(system.logger, Date.now);
      this.refusalLogOf = system;
    }
    system.metrics.inc('doyen_http_refused_total', 'Management requests refused', { reason });
    const path = (request.url ?? '/').split('?')[0]!.slice(0, 200);
    this.refusalLog!.warn(
      `http.refused:${reason}`,
      {
        event: 'http.refused',
        reason,
        method: request.method,
        path,
        remote: request.socket.remoteAddress,
        ...(request.headers.origin !== undefined ? { origin: request.headers.origin.slice(0, 200) } : {}),
      },
      `management request refused (${reason}): ${request.method} ${path}`,
    );
  }

  /** Adds routes tried before the built-in ones. */
  addRoute(route: Route): void {
    this.routes.push(route);
  }

  /** Adds a handler for upgrade (WebSocket) requests; the sockets are closed with the server. */
  onUpgrade(route: UpgradeRoute): void {
    this.upgradeRoutes.push(route);
  }

  close(): Promise<void> {
    for (const socket of this.upgraded) socket.destroy();
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
