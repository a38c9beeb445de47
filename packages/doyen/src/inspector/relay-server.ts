import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { type Logger, RateLimitedLog } from '@doyen/core';
import { type WebSocket, WebSocketServer } from 'ws';
import { ownOrigins } from '../management-guard.js';

/** Where viewers (the bridge page, or any reader) connect; every other path is for nodes. */
export const VIEWER_PATH = '/viewer';

/** The Stately inspector the bridge page embeds; events are posted to this origin only. */
const STATELY_INSPECT_URL = 'https://stately.ai/inspect';
const STATELY_ORIGIN = 'https://stately.ai';

export interface RelayServerOptions {
  /** Interface to bind (default 127.0.0.1). */
  readonly host?: string;
  /** 0 picks a free port. */
  readonly port: number;
  /** Largest frame a node may send (default 1 MiB); larger closes its connection (1009). */
  readonly maxPayload?: number;
  /** Browser origins allowed besides the server's own loopback ones. */
  readonly allowedOrigins?: readonly string[];
  /** Node events kept for viewers that connect later (default 200, at most `replayBytes` in all). */
  readonly replayEvents?: number;
  readonly replayBytes?: number;
  /**
   * Bytes queued for one viewer before it counts as not reading and is closed (default 4 MiB):
   * the relay's memory is at most this per viewer, not whatever the nodes send while a viewer
   * sleeps. A new viewer's replay takes at most half of it (the newest events).
   */
  readonly maxViewerBufferBytes?: number;
  /** Viewers at once (default 16); one more closes the oldest. */
  readonly maxViewers?: number;
  /** Where refusals are logged (`inspector.refused`); silent when absent. */
  readonly logger?: Logger;
}

/** What the relay refused or dropped since it started (tests and the log read them). */
export interface RelayCounters {
  foreignOrigin: number;
  browserAsNode: number;
  notAnEvent: number;
  viewerFrames: number;
  /** Viewers closed because they did not read what they were sent. */
  slowViewers: number;
  /** Viewers closed to make room for a newer one (maxViewers). */
  viewersReplaced: number;
}

const DEFAULT_MAX_VIEWER_BUFFER = 4 * 1024 * 1024;
const DEFAULT_MAX_VIEWERS = 16;
/** A viewer closed for not reading gets this long to take the close frame, then is cut. */
const CLOSE_GRACE_MS = 1000;

/**
 * The relay between nodes started with `--inspect` and the Stately inspector page, replacing
 * `@statelyai/inspect`'s `createInspectorServer`, which listened on every interface, accepted
 * 100 MiB frames, and relayed and replayed whatever any client sent to every client — so a web
 * page could feed forged events to every viewer. Here the two sides are told apart by path:
 *
 * - nodes connect on any path but `/viewer` and must carry no `Origin` (browsers always send
 *   one, so no web page can pose as a node); their JSON events go to the viewers only (never to
 *   other nodes) and into a bounded replay buffer for viewers that connect later;
 * - viewers connect on `/viewer` from an allowed origin (or from no browser at all); nothing
 *   they send is relayed or kept.
 */
export class InspectorRelay {
  readonly counters: RelayCounters = {
    foreignOrigin: 0,
    browserAsNode: 0,
    notAnEvent: 0,
    viewerFrames: 0,
    slowViewers: 0,
    viewersReplaced: 0,
  };
  private readonly viewers = new Set<WebSocket>();
  private readonly nodes = new Set<WebSocket>();
  private readonly replay: string[] = [];
  private replayedBytes = 0;
  private readonly refusalLog: RateLimitedLog | undefined;

  private constructor(
    private readonly server: ReturnType<typeof createServer>,
    private readonly nodeWss: WebSocketServer,
    private readonly viewerWss: WebSocketServer,
    private readonly options: RelayServerOptions,
    readonly host: string,
    readonly port: number,
    private readonly origins: ReadonlySet<string>,
  ) {
    if (options.logger) this.refusalLog = new RateLimitedLog(options.logger, Date.now);
  }

  static async start(options: RelayServerOptions): Promise<InspectorRelay> {
    const host = options.host ?? '127.0.0.1';
    const nodeWss = new WebSocketServer({
      noServer: true,
      maxPayload: options.maxPayload ?? 1024 * 1024,
      perMessageDeflate: false,
    });
    const viewerWss = new WebSocketServer({ noServer: true, maxPayload: 4096, perMessageDeflate: false });
    let relay: InspectorRelay | undefined;
    const server = createServer((request, response) => {
      if (request.method !== 'GET' && request.method !== 'HEAD') {
        response.writeHead(405, { 'content-type': 'text/plain' }).end('method not allowed\n');
        return;
      }
      response.writeHead(200, {
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-store',
        'content-security-policy': `default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; frame-src ${STATELY_ORIGIN}; connect-src 'self'`,
      });
      response.end(request.method === 'HEAD' ? undefined : bridgePage());
    });
    server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      socket.on('error', () => socket.destroy());
      if (relay) relay.upgrade(request, socket, head);
      else socket.destroy();
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', (error: NodeJS.ErrnoException) =>
        reject(
          error.code === 'EADDRINUSE'
            ? new Error(`port ${options.port} is in use (another inspector server?)`)
            : error,
        ),
      );
      server.listen(options.port, host, () => resolve());
    });
    const port = (server.address() as AddressInfo).port;
    const origins = new Set(
      [...ownOrigins('http', host, port), ...(options.allowedOrigins ?? [])].map((o) => o.toLowerCase()),
    );
    relay = new InspectorRelay(server, nodeWss, viewerWss, options, host, port, origins);
    return relay;
  }

  /** The address the server is bound to. */
  get address(): AddressInfo {
    return this.server.address() as AddressInfo;
  }

  get viewerCount(): number {
    return this.viewers.size;
  }

  get nodeCount(): number {
    return this.nodes.size;
  }

  /** Bytes queued to viewers now, in all: what a viewer that does not read costs the relay. */
  get viewerBufferedBytes(): number {
    let bytes = 0;
    for (const ws of this.viewers) bytes += ws.bufferedAmount;
    return bytes;
  }

  private get maxViewerBuffer(): number {
    return this.options.maxViewerBufferBytes ?? DEFAULT_MAX_VIEWER_BUFFER;
  }

  private upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    const origin = request.headers.origin;
    if (path === VIEWER_PATH) {
      if (origin !== undefined && !this.origins.has(origin.toLowerCase())) {
        this.counters.foreignOrigin++;
        this.logRefusal('foreign-origin', request);
        refuse(socket);
        return;
      }
      this.viewerWss.handleUpgrade(request, socket, head, (ws) => this.addViewer(ws));
      return;
    }
    if (origin !== undefined) {
      this.counters.browserAsNode++;
      this.logRefusal('browser-as-node', request);
      refuse(socket);
      return;
    }
    this.nodeWss.handleUpgrade(request, socket, head, (ws) => this.addNode(ws));
  }

  private logRefusal(reason: string, request: IncomingMessage): void {
    this.refusalLog?.warn(
      reason,
      {
        event: 'inspector.refused',
        reason,
        origin: request.headers.origin?.slice(0, 200),
        remote: request.socket.remoteAddress,
      },
      `inspector relay refused a connection (${reason})`,
    );
  }

  private addViewer(ws: WebSocket): void {
    // Set order is age order: at the cap the oldest viewer gives its place to the newest
    const max = this.options.maxViewers ?? DEFAULT_MAX_VIEWERS;
    for (const oldest of this.viewers) {
      if (this.viewers.size < max) break;
      this.counters.viewersReplaced++;
      this.closeViewer(oldest, 'viewer-replaced', 'a newer viewer took this place');
    }
    this.viewers.add(ws);
    ws.on('error', () => ws.terminate());
    ws.on('close', () => this.viewers.delete(ws));
    ws.on('message', () => {
      this.counters.viewerFrames++;
    });
    // the newest events that fit in half the viewer's budget, oldest first
    let from = this.replay.length;
    let bytes = 0;
    while (from > 0 && bytes + this.replay[from - 1]!.length <= this.maxViewerBuffer / 2)
      bytes += this.replay[--from]!.length;
    for (const text of this.replay.slice(from)) ws.send(text);
  }

  /** Sends to a viewer that keeps up; one whose queue would pass its budget is closed instead. */
  private sendToViewer(ws: WebSocket, text: string): void {
    if (ws.readyState !== ws.OPEN) return;
    if (ws.bufferedAmount + text.length > this.maxViewerBuffer) {
      this.counters.slowViewers++;
      this.closeViewer(ws, 'slow-viewer', 'the viewer does not read what it is sent');
      return;
    }
    ws.send(text);
  }

  private closeViewer(ws: WebSocket, reason: string, why: string): void {
    this.viewers.delete(ws);
    this.refusalLog?.warn(
      reason,
      { event: 'inspector.viewer-closed', reason, buffered: ws.bufferedAmount },
      `inspector relay closed a viewer: ${why}`,
    );
    ws.close(1008, why);
    // its queue is memory: if the close frame cannot get through, cut the connection
    setTimeout(() => ws.terminate(), CLOSE_GRACE_MS).unref();
  }

  private addNode(ws: WebSocket): void {
    this.nodes.add(ws);
    ws.on('error', () => ws.terminate());
    ws.on('close', () => this.nodes.delete(ws));
    ws.on('message', (data, isBinary) => {
      const text = isBinary ? undefined : String(data);
      if (text === undefined || !isInspectionEvent(text)) {
        this.counters.notAnEvent++;
        return;
      }
      this.keep(text);
      for (const viewer of this.viewers) this.sendToViewer(viewer, text);
    });
  }

  private keep(text: string): void {
    const maxEvents = this.options.replayEvents ?? 200;
    const maxBytes = this.options.replayBytes ?? 8 * 1024 * 1024;
    this.replay.push(text);
    this.replayedBytes += text.length;
    while (this.replay.length > maxEvents || this.replayedBytes > maxBytes)
      this.replayedBytes -= this.replay.shift()!.length;
  }

  stop(): Promise<void> {
    for (const ws of [...this.viewers, ...this.nodes]) ws.terminate();
    this.nodeWss.close();
    this.viewerWss.close();
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

function refuse(socket: Duplex): void {
  socket.end('HTTP/1.1 403 Forbidden\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
}

/** A node's frame is relayed only when it is a JSON object with an `@xstate.` type, as the inspector expects. */
function isInspectionEvent(text: string): boolean {
  try {
    const value = JSON.parse(text) as unknown;
    return (
      typeof value === 'object' &&
      value !== null &&
      typeof (value as { type?: unknown }).type === 'string' &&
      (value as { type: string }).type.startsWith('@xstate.')
    );
  } catch {
    return false;
  }
}

/**
 * The page people open: the Stately inspector in an iframe, fed from `/viewer` of the server
 * that served it. Messages go to, and are accepted from, stately.ai only.
 */
function bridgePage(): string {
  return `<!DOCTYPE html>
<html>
<head>
  <title>Stately Inspector</title>
  <style>* { margin: 0; padding: 0; } html, body { height: 100%; } iframe { width: 100%; height: 100%; border: none; }</style>
</head>
<body>
  <iframe id="inspector" src="${STATELY_INSPECT_URL}"></iframe>
  <script>
    const iframe = document.getElementById('inspector');
    const buffer = [];
    let connected = false;
    window.addEventListener('message', (e) => {
      if (e.origin !== '${STATELY_ORIGIN}' || !e.data || e.data.type !== '@statelyai.connected') return;
      connected = true;
      for (const event of buffer) iframe.contentWindow.postMessage(event, '${STATELY_ORIGIN}');
      buffer.length = 0;
    });
    const ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '${VIEWER_PATH}');
    ws.onmessage = (event) => {
      const data = JSON.parse(event.data);
      if (connected) iframe.contentWindow.postMessage(data, '${STATELY_ORIGIN}');
      else buffer.push(data);
    };
  </script>
</body>
</html>`;
}
