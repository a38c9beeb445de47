import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ActorRef, ActorSystem } from '@doyen/core';
import { type WebSocket, WebSocketServer } from 'ws';
import type { ManagementServer } from '../management-http.js';
import { listMachines, type MachineState, machineStateOf, systemActorPaths } from './machines.js';
import { renderInspectorPage } from './page.js';

/** What the inspector reads of a node, at request time: the system changes when the node restarts. */
export interface InspectedNode {
  readonly system: ActorSystem;
  readonly incarnations: number;
}

export interface LocalInspectorOptions {
  /** Least time between two pushed updates of one machine, ms (default 50: at most 20 per second). */
  readonly minUpdateIntervalMs?: number;
  /** How often the machine list is checked while someone watches: new, restarted or stopped machines, a new incarnation (default 500 ms). */
  readonly rescanIntervalMs?: number;
}

/** Sent on `/inspector/live` when a client connects and whenever the node's machine set changes. */
export interface LiveHello {
  readonly type: 'hello';
  readonly node: string;
  readonly uid: string;
  readonly incarnation: number;
  readonly machines: readonly string[];
}

/** Sent on `/inspector/live` when a machine's snapshot changed (throttled per machine). */
export interface LiveUpdate extends MachineState {
  readonly type: 'update';
  /** Wall-clock time of the snapshot, ms since the epoch. */
  readonly at: number;
}

export const INSPECTOR_PATHS = {
  page: '/inspector',
  machines: '/inspector/machines',
  live: '/inspector/live',
} as const;

/** Drop updates to a client whose socket has this much unsent (a slow browser); the next one catches up. */
const MAX_BUFFERED = 1 << 20;

interface Watch {
  readonly path: string;
  readonly ref: ActorRef;
  readonly unsubscribe: () => void;
  last: unknown;
  lastSentAt: number;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/** Pushes machine snapshots to the live clients; watches machines only while someone listens. */
class LiveHub {
  private readonly clients = new Set<WebSocket>();
  private readonly watches = new Map<string, Watch>();
  private system: ActorSystem | undefined;
  private machinesKey = '';
  private rescan: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly node: InspectedNode,
    private readonly minIntervalMs: number,
    private readonly rescanIntervalMs: number,
  ) {}

  get size(): number {
    return this.clients.size;
  }

  add(ws: WebSocket): void {
    this.clients.add(ws);
    ws.on('error', () => ws.terminate());
    ws.on('close', () => {
      this.clients.delete(ws);
      if (this.clients.size === 0) this.stopWatching();
    });
    this.sync();
    this.send(ws, JSON.stringify(this.hello()));
    for (const w of this.watches.values()) {
      const update = this.updateOf(w);
      if (update) this.send(ws, JSON.stringify(update));
    }
    this.rescan ??= setInterval(() => this.sync(), this.rescanIntervalMs);
    this.rescan.unref?.();
  }

  /** Follows the node's current machines: a new incarnation, machines started, restarted or stopped. */
  sync(): void {
    const system = this.node.system;
    let changed = false;
    if (system !== this.system) {
      this.unwatchAll();
      this.system = system;
      changed = true;
    }
    const fresh: Watch[] = [];
    const present = new Set<string>();
    for (const path of systemActorPaths(system)) {
      const ref = system.lookup(path);
      if (!ref || !machineStateOf(path, system.snapshotOf(ref))) continue;
      present.add(path);
      const existing = this.watches.get(path);
      if (existing && existing.ref === ref) continue;
      if (existing) this.unwatch(existing);
      fresh.push(this.watch(system, path, ref));
    }
    for (const w of [...this.watches.values()]) if (!present.has(w.path)) this.unwatch(w);
    const key = `${system.node.uid}|${[...present].join(',')}`;
    if (key !== this.machinesKey) {
      this.machinesKey = key;
      changed = true;
    }
    if (changed) this.broadcast(this.hello());
    for (const w of fresh) {
      const update = this.updateOf(w);
      if (update) this.broadcast(update);
    }
  }

  close(): void {
    for (const ws of this.clients) ws.terminate();
    this.clients.clear();
    this.stopWatching();
  }

  private hello(): LiveHello {
    const system = this.node.system;
    return {
      type: 'hello',
      node: system.nodeName,
      uid: system.node.uid,
      incarnation: this.node.incarnations,
      machines: [...this.watches.keys()],
    };
  }

  private watch(system: ActorSystem, path: string, ref: ActorRef): Watch {
    const w: Watch = {
      path,
      ref,
      unsubscribe: () => {},
      last: system.snapshotOf(ref),
      lastSentAt: 0,
      timer: undefined,
    };
    (w as { unsubscribe: () => void }).unsubscribe = system.subscribeSnapshots(ref, (snapshot) => {
      if (snapshot === w.last) return;
      w.last = snapshot;
      this.schedule(w);
    });
    this.watches.set(path, w);
    return w;
  }

  private schedule(w: Watch): void {
    if (w.timer !== undefined) return;
    const wait = w.lastSentAt + this.minIntervalMs - Date.now();
    if (wait <= 0) {
      this.flush(w);
      return;
    }
    w.timer = setTimeout(() => {
      w.timer = undefined;
      if (this.watches.get(w.path) === w) this.flush(w);
    }, wait);
    w.timer.unref?.();
  }

  private flush(w: Watch): void {
    w.lastSentAt = Date.now();
    const update = this.updateOf(w);
    if (update) this.broadcast(update);
  }

  private updateOf(w: Watch): LiveUpdate | undefined {
    const state = machineStateOf(w.path, w.last);
    return state ? { type: 'update', ...state, at: Date.now() } : undefined;
  }

  private unwatch(w: Watch): void {
    w.unsubscribe();
    if (w.timer !== undefined) clearTimeout(w.timer);
    this.watches.delete(w.path);
  }

  private unwatchAll(): void {
    for (const w of [...this.watches.values()]) this.unwatch(w);
  }

  private stopWatching(): void {
    if (this.rescan !== undefined) clearInterval(this.rescan);
    this.rescan = undefined;
    this.unwatchAll();
    this.system = undefined;
    this.machinesKey = '';
  }

  private broadcast(message: LiveHello | LiveUpdate): void {
    if (this.clients.size === 0) return;
    const text = JSON.stringify(message);
    for (const ws of this.clients) this.send(ws, text);
  }

  private send(ws: WebSocket, text: string): void {
    if (ws.readyState !== ws.OPEN || ws.bufferedAmount > MAX_BUFFERED) return;
    ws.send(text, (error) => {
      if (error) ws.terminate();
    });
  }
}

export interface LocalInspector {
  /** Live clients connected now. */
  readonly clients: number;
  /** Disconnects the live clients and stops watching; the routes answer 404 from then on. */
  close(): void;
}

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
  });
  response.end(`${JSON.stringify(body, null, 2)}\n`);
}

/**
 * A browser may only open the live socket from a page of this server or an allowed origin.
 * Checked against the allow-list, never against `Host`: after DNS rebinding an attacker's page
 * sends `Host` equal to its own origin's host, so comparing the two proves nothing. A client
 * without `Origin` is not a browser (browsers always send it on WebSocket handshakes).
 */
function originAllowed(http: ManagementServer, request: IncomingMessage): boolean {
  const origin = request.headers.origin;
  return origin === undefined || http.allowsOrigin(origin);
}

/**
 * Serves the local inspector from the management endpoint: `GET /inspector` (the page),
 * `GET /inspector/machines` (machines with definitions and current states) and the
 * `/inspector/live` WebSocket that pushes state changes.
 */
export function attachLocalInspector(
  http: ManagementServer,
  node: InspectedNode,
  options: LocalInspectorOptions = {},
): LocalInspector {
  const hub = new LiveHub(node, options.minUpdateIntervalMs ?? 50, options.rescanIntervalMs ?? 500);
  const wss = new WebSocketServer({ noServer: true, maxPayload: 4096, perMessageDeflate: false });
  let closed = false;
  http.addRoute((request, response, url) => {
    if (closed) return false;
    const path = url.pathname.replace(/\/+$/, '');
    if (path !== INSPECTOR_PATHS.page && path !== INSPECTOR_PATHS.machines) return false;
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      sendJson(response, 405, { error: `${request.method} not allowed on ${path}` });
      return true;
    }
    const system = node.system;
    if (path === INSPECTOR_PATHS.machines) {
      sendJson(response, 200, listMachines(system));
      return true;
    }
    const html = renderInspectorPage({ node: system.nodeName, uid: system.node.uid });
    response.writeHead(200, {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      'content-security-policy':
        "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:",
    });
    response.end(request.method === 'HEAD' ? undefined : html);
    return true;
  });
  http.onUpgrade((request, socket, head) => {
    if (closed) return false;
    const url = new URL(request.url ?? '/', 'http://localhost');
    if (url.pathname !== INSPECTOR_PATHS.live) return false;
    if (!originAllowed(http, request)) {
      http.refused(request, 'origin');
      socket.end('HTTP/1.1 403 Forbidden\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
      return true;
    }
    wss.handleUpgrade(request, socket, head, (ws) => {
      if (closed) ws.terminate();
      else hub.add(ws);
    });
    return true;
  });
  return {
    get clients() {
      return hub.size;
    },
    close() {
      if (closed) return;
      closed = true;
      hub.close();
      wss.close();
    },
  };
}
