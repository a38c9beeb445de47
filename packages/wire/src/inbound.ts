import {
  type ActorSystem,
  formatNodeAddress,
  type Lane,
  RingBuffer,
  type UniqueNodeAddress,
} from '@doyen/core';
import type WebSocket from 'ws';
import { BatchDecoder, decodePlain, encodePlain } from './codec.js';
import type { WireConfig } from './config.js';
import {
  type Challenge,
  decodeHello,
  encodeChallenge,
  encodeWelcome,
  helloProof,
  newNonce,
  proofMatches,
  welcomeProof,
} from './handshake.js';
import { CloseCode, PROTOCOL_VERSION, type RejectReason } from './protocol.js';
import { checkEnvelope } from './validation.js';

const INBOUND_BUDGET_MS = 1;
const INBOUND_PAUSE_FRAMES = 2;

/** Callbacks from an inbound connection to the transport that owns it. */
export interface InboundHooks {
  /** Fault injection (tests, demos): true while traffic from this peer address must vanish. */
  readonly blackholed?: (peerAddress: string) => boolean;
  readonly reject: (reason: RejectReason, detail: string, peer: string) => void;
  readonly handshakeDone: (connection: InboundConnection) => void;
  readonly closed: (connection: InboundConnection) => void;
}

/**
 * The accepting side of one connection: it challenges the dialer, verifies its hello, then
 * validates every frame and envelope before handing messages to the actor system. Any
 * violation is counted, logged and answered with a drop or a close; nothing else happens.
 */
export class InboundConnection {
  private state: 'awaiting-hello' | 'open' | 'closed' = 'awaiting-hello';
  private readonly challenge: Challenge = { version: PROTOCOL_VERSION, nonce: newNonce() };
  private readonly decoder = new BatchDecoder();
  private readonly deadline: NodeJS.Timeout;
  lane: Lane | undefined;
  peerName: string;
  /** User-lane frames waiting for their turn: processed under a time budget so system frames get in. */
  private readonly pending = new RingBuffer<Buffer>(16);
  private drainScheduled = false;

  constructor(
    private readonly system: ActorSystem,
    private readonly config: WireConfig,
    private readonly socket: WebSocket,
    remote: string,
    private readonly hooks: InboundHooks,
  ) {
    this.peerName = remote;
    this.deadline = setTimeout(
      () => this.close(CloseCode.handshakeTimeout, 'handshake-timeout', 'no valid hello in time'),
      config.handshakeTimeoutMs,
    );
    this.deadline.unref();
    socket.on('message', (data: Buffer, isBinary: boolean) => this.onFrame(data, isBinary));
    socket.on('error', (error: Error & { code?: string }) => {
      if (error.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH') {
        this.hooks.reject('frame-too-large', `frame over ${config.maxFrameBytes} bytes`, this.peerName);
      }
      // ws closes the socket itself after protocol errors; 'close' does the bookkeeping
    });
    socket.on('close', () => {
      clearTimeout(this.deadline);
      const wasOpen = this.state === 'open';
      this.state = 'closed';
      if (wasOpen || this.lane === undefined) this.hooks.closed(this);
    });
    socket.send(encodePlain(encodeChallenge(this.challenge)));
  }

  get isOpen(): boolean {
    return this.state === 'open';
  }

  close(code: number, reason: RejectReason | 'shutdown', detail: string): void {
    if (this.state === 'closed') return;
    if (reason !== 'shutdown') this.hooks.reject(reason, detail, this.peerName);
    this.state = 'closed';
    clearTimeout(this.deadline);
    this.socket.close(code, detail.slice(0, 120));
    // a peer that ignores the close handshake is cut off
    setTimeout(() => this.socket.terminate(), 1000).unref();
  }

  private onFrame(data: Buffer, isBinary: boolean): void {
    if (this.state === 'closed') return;
    if (!isBinary) {
      this.close(CloseCode.unsupportedData, 'text-frame', 'binary frames only');
      return;
    }
    if (this.state === 'awaiting-hello') this.onHello(data);
    else if (this.lane === 'system') this.onBatch(data);
    else this.enqueueUserFrame(data);
  }

  /**
   * A flood of user frames must not hold the event loop: Node reads many chunks per socket per
   * turn, so frames are queued, processed for at most `INBOUND_BUDGET_MS` per turn, and the
   * socket is paused (TCP backpressure to the sender) while the queue is long.
   */
  private enqueueUserFrame(data: Buffer): void {
    this.pending.push(data);
    if (this.pending.length >= INBOUND_PAUSE_FRAMES && !this.socket.isPaused) this.socket.pause();
    if (!this.drainScheduled) {
      this.drainScheduled = true;
      setImmediate(() => this.drain());
    }
  }

  private drain(): void {
    this.drainScheduled = false;
    const started = performance.now();
    while (this.pending.length > 0 && this.state === 'open') {
      this.onBatch(this.pending.shift()!);
      if (performance.now() - started >= INBOUND_BUDGET_MS) break;
    }
    if (this.state !== 'open') return;
    if (this.pending.length > 0) {
      this.drainScheduled = true;
      setImmediate(() => this.drain());
    } else if (this.socket.isPaused) {
      this.socket.resume();
    }
  }

  private onHello(data: Buffer): void {
    let frame: unknown;
    try {
      frame = decodePlain(data);
    } catch (error) {
      this.close(
        CloseCode.invalidPayload,
        'malformed-msgpack',
        `undecodable hello: ${(error as Error).message}`,
      );
      return;
    }
    const hello = decodeHello(frame);
    if (!hello) {
      const looksLikeBatch = Array.isArray(frame) && Array.isArray(frame[0]);
      if (looksLikeBatch)
        this.close(CloseCode.handshakeRequired, 'before-handshake', 'messages before the handshake');
      else this.close(CloseCode.policyViolation, 'bad-handshake', 'first frame must be a hello');
      return;
    }
    this.peerName = `${formatNodeAddress(hello)}#${hello.uid}`;
    this.peerAddress = formatNodeAddress(hello);
    if (hello.version !== PROTOCOL_VERSION) {
      this.close(
        CloseCode.wrongVersion,
        'wrong-version',
        `protocol ${hello.version} not supported (this node speaks ${PROTOCOL_VERSION})`,
      );
      return;
    }
    if (hello.cluster !== this.system.cluster) {
      this.close(
        CloseCode.wrongCluster,
        'wrong-cluster',
        `cluster ${JSON.stringify(hello.cluster)} is not ${JSON.stringify(this.system.cluster)}`,
      );
      return;
    }
    if (!proofMatches(helloProof(this.config.secret, hello, this.challenge.nonce), hello.proof)) {
      this.close(CloseCode.badProof, 'bad-proof', 'bad proof of the cluster secret');
      return;
    }
    clearTimeout(this.deadline);
    const me = this.system.node;
    const welcome = { host: me.host, port: me.port, uid: me.uid };
    const proof = welcomeProof(this.config.secret, this.system.cluster, welcome, hello.nonce);
    this.socket.send(encodePlain(encodeWelcome({ ...welcome, proof })));
    this.lane = hello.lane;
    this.origin = { host: hello.host, port: hello.port, uid: hello.uid };
    this.state = 'open';
    this.hooks.handshakeDone(this);
  }

  private peerAddress: string | undefined;
  /** The node incarnation this connection authenticated as (set once the hello is verified). */
  private origin: UniqueNodeAddress | undefined;

  private onBatch(data: Buffer): void {
    let batch: unknown;
    try {
      batch = this.decoder.decode(this.system, data);
    } catch (error) {
      this.close(
        CloseCode.invalidPayload,
        'malformed-msgpack',
        `undecodable frame: ${(error as Error).message}`,
      );
      return;
    }
    if (batch === 'reset') return;
    // decoded all the same: the record definitions in it must not be lost
    if (this.peerAddress !== undefined && this.hooks.blackholed?.(this.peerAddress)) return;
    if (!Array.isArray(batch)) {
      this.close(CloseCode.invalidPayload, 'bad-batch', 'a frame must be an array of envelopes');
      return;
    }
    const lane = this.lane!;
    let accepted = 0;
    for (const raw of batch) {
      const checked = checkEnvelope(this.system, raw, this.origin!);
      if (!checked.ok) {
        this.hooks.reject(checked.reason, checked.detail, this.peerName);
        continue;
      }
      accepted++;
      this.system.receiveRemote(checked.envelope, this.origin!);
    }
    if (accepted > 0) {
      this.system.metrics.inc('doyen_wire_messages_received_total', 'Messages received', { lane }, accepted);
    }
  }
}
