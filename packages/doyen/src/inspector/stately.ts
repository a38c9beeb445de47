import { addressOfKey, type Logger } from '@doyen/core';
import type { StatelyActorEvent, StatelyInspectionEvent } from '@statelyai/inspect';
import WebSocket from 'ws';
import type { AnyActorRef, InspectionEvent, Observer } from 'xstate';
import { toPlain } from './safe-json.js';

/** `inspect` of the node config: `true` for the default relay, or where the relay listens. */
export type InspectOption = boolean | { readonly url?: string };

/** Where the inspector relay (`doyen inspector`) listens by default: loopback only. */
export const DEFAULT_INSPECTOR_URL = 'ws://127.0.0.1:8080';

/** @statelyai/inspect, loaded only by nodes that send to the inspector (see loadStatelyInspect). */
let statelyInspect: typeof import('@statelyai/inspect') | undefined;

/** Loads @statelyai/inspect; a StatelyBridge needs it loaded first (startNode does this). */
export async function loadStatelyInspect(): Promise<void> {
  statelyInspect ??= await import('@statelyai/inspect');
}

export function inspectorUrlOf(option: InspectOption | undefined): string | undefined {
  if (!option) return undefined;
  return (option === true ? undefined : option.url) ?? DEFAULT_INSPECTOR_URL;
}

/** The page people open: the inspector server serves it on the same port (it embeds stately.ai/inspect). */
export function inspectorPageUrl(wsUrl: string): string {
  const u = new URL(wsUrl);
  u.protocol = u.protocol === 'wss:' ? 'https:' : 'http:';
  return u.toString();
}

export interface StatelyBridgeOptions {
  /** `ws://` or `wss://` address of the inspector server (default `ws://127.0.0.1:8080`). */
  readonly url?: string;
  readonly logger: Logger;
  /** First reconnect delay, ms (doubles up to `maxRetryMs`). */
  readonly retryMs?: number;
  readonly maxRetryMs?: number;
  /** Actors whose registration and latest snapshot are kept to replay when the server (re)connects. */
  readonly maxRetainedActors?: number;
}

type SocketState = 'idle' | 'connecting' | 'open' | 'stopped';

/**
 * The connection to the inspector server, with the wire format of `@statelyai/inspect`'s own
 * WebSocket adapter (`createWebSocketInspector`) but a lifecycle fit for a node: its retry timer
 * is unref'd and cancelled by `stop()` (theirs retries every 5 s forever, even after `stop()`,
 * which keeps a stopped node's process alive when no server runs), and instead of a short
 * buffer of old events it keeps each live actor's registration and latest snapshot, replayed
 * on every (re)connect, so an inspector started after the node still shows every machine.
 */
export class StatelyConnection {
  readonly url: string;
  private ws: WebSocket | undefined;
  private state: SocketState = 'idle';
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private retryMs: number;
  private warned = false;
  private readonly actors = new Map<string, string>();
  private readonly snapshots = new Map<string, string>();

  constructor(private readonly options: StatelyBridgeOptions) {
    this.url = options.url ?? DEFAULT_INSPECTOR_URL;
    this.retryMs = options.retryMs ?? 1000;
  }

  get connected(): boolean {
    return this.state === 'open';
  }

  start(): void {
    if (this.state !== 'idle') return;
    this.connect();
  }

  stop(): void {
    this.state = 'stopped';
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    const ws = this.ws;
    this.ws = undefined;
    if (ws) {
      ws.removeAllListeners();
      ws.on('error', () => {});
      ws.terminate();
    }
    this.actors.clear();
    this.snapshots.clear();
  }

  /** Forgets the retained actors whose session ids start with `prefix` (a finished incarnation). */
  forget(prefix: string): void {
    for (const map of [this.actors, this.snapshots])
      for (const key of [...map.keys()]) if (key.startsWith(prefix)) map.delete(key);
  }

  send(event: StatelyInspectionEvent): void {
    if (this.state === 'stopped') return;
    let text: string;
    try {
      text = JSON.stringify(event);
    } catch {
      text = JSON.stringify(
        toPlain(event, { maxDepth: 12, maxItems: 500, maxString: 10_000, maxNodes: 50_000 }),
      );
    }
    this.retain(event, text);
    if (this.state === 'open') this.ws?.send(text);
  }

  private retain(event: StatelyInspectionEvent, text: string): void {
    const id = event.sessionId;
    if (event.type === '@xstate.actor') {
      this.actors.delete(id);
      this.actors.set(id, text);
      this.snapshots.delete(id);
      const max = this.options.maxRetainedActors ?? 2000;
      if (this.actors.size > max) {
        const oldest = this.actors.keys().next().value as string;
        this.actors.delete(oldest);
        this.snapshots.delete(oldest);
      }
    } else if (event.type === '@xstate.snapshot' && this.actors.has(id)) {
      const status = (event.snapshot as { status?: string } | undefined)?.status;
      if (status === 'done' || status === 'error' || status === 'stopped') {
        this.actors.delete(id);
        this.snapshots.delete(id);
      } else {
        this.snapshots.set(id, text);
      }
    }
  }

  private connect(): void {
    if (this.state === 'stopped') return;
    this.state = 'connecting';
    let ws: WebSocket;
    try {
      ws = new WebSocket(this.url, { handshakeTimeout: 5000, perMessageDeflate: false });
    } catch (error) {
      this.options.logger.error(
        { event: 'inspect.bad-url', url: this.url, err: error },
        `cannot connect to the Stately inspector at ${this.url}`,
      );
      this.state = 'stopped';
      return;
    }
    this.ws = ws;
    ws.on('open', () => {
      if (this.ws !== ws) return;
      this.state = 'open';
      this.retryMs = this.options.retryMs ?? 1000;
      this.warned = false;
      this.options.logger.info(
        { event: 'inspect.connected', url: this.url },
        `connected to the Stately inspector server at ${this.url}`,
      );
      for (const text of this.actors.values()) ws.send(text);
      for (const text of this.snapshots.values()) ws.send(text);
    });
    // the relay sends nothing to nodes
    ws.on('message', () => {});
    ws.on('error', (error) => {
      if (this.ws !== ws || this.warned) return;
      this.warned = true;
      this.options.logger.warn(
        { event: 'inspect.unavailable', url: this.url, reason: error.message },
        `no Stately inspector server at ${this.url} (${error.message}); retrying quietly`,
      );
    });
    ws.on('close', () => {
      if (this.ws !== ws) return;
      this.ws = undefined;
      if (this.state === 'stopped') return;
      this.state = 'idle';
      this.retryTimer = setTimeout(() => {
        this.retryTimer = undefined;
        this.connect();
      }, this.retryMs);
      this.retryTimer.unref?.();
      this.retryMs = Math.min(this.retryMs * 2, this.options.maxRetryMs ?? 30_000);
    });
  }
}

/** An actor ref as the Stately inspector should see it: a session id unique across nodes and incarnations. */
interface RefView {
  readonly id: string;
  readonly sessionId: string;
  readonly logic: unknown;
  readonly _parent: RefView | undefined;
  getSnapshot(): unknown;
}

/**
 * Sends a node's xstate inspection events to the Stately inspector through one connection.
 * Every doyen actor is the root of its own xstate system, so xstate's session ids (`x:0`, …)
 * repeat across actors and nodes: events are re-labelled with `node#uid` and the actor path.
 */
export class StatelyBridge {
  readonly connection: StatelyConnection;

  constructor(options: StatelyBridgeOptions) {
    this.connection = new StatelyConnection(options);
    this.connection.start();
  }

  get url(): string {
    return this.connection.url;
  }

  /** The page people open to watch (served by the inspector server; it loads stately.ai, online only). */
  get pageUrl(): string {
    return inspectorPageUrl(this.url);
  }

  /**
   * The observer for one incarnation's actor system (ActorSystemConfig `inspect`). `label`
   * names the incarnation (`host:port#uid`); it is read when events are converted, after the
   * system exists.
   */
  observerFor(label: () => string): Observer<InspectionEvent> {
    const connection = this.connection;
    if (!statelyInspect)
      throw new Error('@statelyai/inspect is not loaded: await loadStatelyInspect() first');
    const inspector = statelyInspect.createInspector(
      { send: (event) => connection.send(event) },
      {
        autoStart: false,
        sanitizeContext: (context) => toPlain(context, { maxDepth: 8, maxItems: 200 }) as never,
        sanitizeEvent: (event) => toPlain(event, { maxDepth: 6, maxItems: 100 }) as never,
        // a registration carries the live snapshot object: keep what the inspector shows, not the machine
        serialize: (event) =>
          event.type === '@xstate.actor' ? { ...event, snapshot: pickSnapshot(event.snapshot) } : event,
      },
    );
    const views = new WeakMap<AnyActorRef, RefView>();
    const viewOf = (ref: AnyActorRef): RefView => {
      let view = views.get(ref);
      if (view) return view;
      const parent = (ref as { _parent?: AnyActorRef })._parent;
      const root = rootOf(ref);
      const rootPath = root.id;
      const sessionId = () => (parent ? `${label()}${rootPath}~${ref.sessionId}` : `${label()}${rootPath}`);
      const nodeName = () => addressOfKey(label());
      view = {
        get id() {
          return parent ? ref.id : `${nodeName()}${rootPath}`;
        },
        get sessionId() {
          return sessionId();
        },
        logic: (ref as { logic?: unknown }).logic,
        _parent: parent ? viewOf(parent) : undefined,
        getSnapshot: () => ref.getSnapshot(),
      };
      views.set(ref, view);
      return view;
    };
    return {
      next: (event: InspectionEvent) => {
        try {
          const mapped: Record<string, unknown> = {
            ...event,
            actorRef: viewOf(event.actorRef as AnyActorRef),
            rootId: undefined,
          };
          if ('sourceRef' in event && event.sourceRef)
            mapped.sourceRef = viewOf(event.sourceRef as AnyActorRef);
          Object.defineProperty(mapped, 'rootId', {
            enumerable: true,
            get: () => viewOf(rootOf(event.actorRef as AnyActorRef)).sessionId,
          });
          inspector.inspect.next?.(mapped as unknown as InspectionEvent);
        } catch {
          // inspection must never disturb the actor
        }
      },
    };
  }

  /** Forgets what was kept for replay of an incarnation that ended. */
  forget(label: string): void {
    this.connection.forget(label);
  }

  stop(): void {
    this.connection.stop();
  }
}

function pickSnapshot(snapshot: unknown): StatelyActorEvent['snapshot'] {
  if (typeof snapshot !== 'object' || snapshot === null) return { status: 'active' };
  const s = snapshot as Record<string, unknown>;
  const status = typeof s.status === 'string' ? s.status : 'active';
  const out: StatelyActorEvent['snapshot'] = { status: status as 'active' };
  // value is plain data and context was sanitized already
  if (s.value !== undefined) out.value = s.value;
  if (s.context !== undefined) out.context = s.context;
  if (s.output !== undefined) out.output = toPlain(s.output);
  return out;
}

function rootOf(ref: AnyActorRef): AnyActorRef {
  let r = ref;
  for (let p = (r as { _parent?: AnyActorRef })._parent; p; p = (r as { _parent?: AnyActorRef })._parent)
    r = p;
  return r;
}
