import {
  type ActorSystem,
  type CounterSeries,
  type Envelope,
  formatNodeAddress,
  type Lane,
  type NodeAddress,
  nodeKey,
  RingBuffer,
} from '@doyen/core';
import WebSocket from 'ws';
import { MAX_ROUTES } from './batch-frame.js';
import { BatchEncoder, decodeHandshakeFrame, encodePlain } from './codec.js';
import { reconnectDelay, type WireConfig } from './config.js';
import { FrameRejectedError } from './frame-scan.js';
import {
  decodeChallenge,
  decodeWelcome,
  encodeHello,
  newNonce,
  signedHello,
  type Transcript,
  welcomeCheck,
} from './handshake.js';
import type { NodeIdentity } from './node-identity.js';
import { CloseCode, PROTOCOL_VERSION, UNAUTHENTICATED_CLOSE_REASON, WS_PATH } from './protocol.js';
import type { TlsDialOptions } from './tls-endpoint.js';
import { dialTlsFailure } from './tls-errors.js';

/**
 * The dialer's frame mask: zero. RFC 6455 makes a client mask its frames so that script in a
 * browser cannot put chosen bytes on the wire for a caching proxy to misread; a node's
 * connections to its peers carry no browser's script, and with TLS nothing is in the clear
 * anyway. With a random mask `ws` copied every frame and XORed each byte of it (8 % of the
 * sender's CPU in issue 29's sharded tell), and the receiving `ws` unmasked it again; with a
 * zero mask both skip it, and the frame is still a valid masked frame.
 */
const zeroFrameMask = (mask: Buffer): void => {
  mask.fill(0);
};

/** Bytes encoded per flush turn before yielding to the event loop. */
const FLUSH_BUDGET_BYTES = 128 * 1024;

type State = 'idle' | 'connecting' | 'ready' | 'backing-off' | 'closed';

/** Why a dial failed; the label of `doyen_wire_handshake_failures_total`. */
export type DialFailure =
  | 'bad-challenge'
  | 'wrong-version'
  | 'bad-welcome'
  | 'bad-proof'
  | 'wrong-peer'
  | 'wrong-key'
  | 'malformed-msgpack'
  | 'unsupported-msgpack'
  | 'too-deep'
  | 'timeout'
  | 'refused';

/** The identity the peer proved in its welcome. */
export interface PeerIdentity {
  readonly host: string;
  readonly port: number;
  readonly uid: string;
  readonly publicKey: string;
}

/**
 * The outbound side of one lane to one peer: a bounded queue, a WebSocket we dial on demand,
 * batching per event-loop tick, backpressure from the socket, and reconnect with backoff.
 * Delivery is at most once: frames lost with a broken connection are not resent.
 */
export class Association {
  private readonly queue = new RingBuffer<Envelope>(64);
  private state: State = 'idle';
  private socket: WebSocket | undefined;
  private encoder = new BatchEncoder();
  private inflightBytes = 0;
  private flushScheduled = false;
  /** Inside flush or sendFullBatch: a nested one must not interleave its frames with this one's. */
  private flushing = false;
  private attempts = 0;
  private timer: NodeJS.Timeout | undefined;
  /** Envelopes per frame, adapted to the observed bytes per envelope so frames stay near `batchBytes`. */
  private batchSize = 256;
  peer: PeerIdentity | undefined;
  /** The socket whose dial we failed ourselves (its close is not counted again as a refusal). */
  private failedDial: WebSocket | undefined;
  /** Why the last dial failed (`connect ECONNREFUSED …`, a handshake failure), until one succeeds. */
  private dialFailure: string | undefined;
  /** This lane's frame and message counters, taken at the first frame (see Metrics.counterSeries). */
  private framesSent: CounterSeries | undefined;
  private messagesSent: CounterSeries | undefined;

  constructor(
    private readonly system: ActorSystem,
    private readonly config: WireConfig,
    readonly target: NodeAddress,
    readonly lane: Lane,
    /** This node's identity key: every hello is signed with it. */
    private readonly identity: NodeIdentity,
    /** With mutual TLS: the options of a `wss` dial, read at each dial (a reload changes them). */
    private readonly tls?: () => TlsDialOptions,
    /** The local address to dial from (the node's own listen address), when it is one IP. */
    private readonly localAddress?: string,
    /** Told of every dial refused with ECONNREFUSED (see WsTransport.onConnectionRefused). */
    private readonly onRefused?: (target: NodeAddress) => void,
  ) {}

  get queued(): number {
    return this.queue.length;
  }

  get isClosed(): boolean {
    return this.state === 'closed';
  }

  get isReady(): boolean {
    return this.state === 'ready';
  }

  /** Why the last dial to the target failed; undefined once connected (or never tried). */
  get lastDialFailure(): string | undefined {
    return this.dialFailure;
  }

  enqueue(envelope: Envelope): void {
    if (this.state === 'closed') {
      this.system.deadLetter(envelope.to, envelope.message, envelope.from, 'node-gone');
      return;
    }
    const capacity = this.lane === 'system' ? this.config.systemQueueCapacity : this.config.userQueueCapacity;
    if (this.queue.length >= capacity) {
      this.system.deadLetter(envelope.to, envelope.message, envelope.from, 'outbound-queue-full');
      return;
    }
    this.queue.push(envelope);
    if (this.state !== 'ready') {
      if (this.state === 'idle') this.connect();
      return;
    }
    // A frame's worth waiting: encode it now, in the sender's turn, so envelopes die young. Left
    // to the per-turn flush budget, a saturating sender kept ~100k of them queued across turns,
    // promoted to the old generation: 16 % of its time went to the collector.
    if (this.queue.length >= this.batchSize && this.inflightBytes < this.config.highWaterBytes)
      this.sendFullBatch();
    if (this.queue.length > 0) this.scheduleFlush(this.inflightBytes === 0);
  }

  /** One batch of `batchSize` from the head of the queue, now (not inside another flush). */
  private sendFullBatch(): void {
    const socket = this.socket;
    if (this.flushing || !socket || socket.readyState !== WebSocket.OPEN) return;
    this.flushing = true;
    try {
      this.sendBatch(socket, this.takeBatch());
    } finally {
      this.flushing = false;
    }
  }

  /**
   * Takes up to `batchSize` envelopes from the head of the queue, all to one recipient
   * incarnation (a frame names it once): a batch ends where the incarnation changes.
   */
  private takeBatch(): Envelope[] {
    const count = Math.min(this.queue.length, this.batchSize);
    const batch: Envelope[] = new Array(count);
    const toUid = this.queue.peek()!.toUid;
    let i = 0;
    while (i < count && this.queue.peek()!.toUid === toUid) batch[i++] = this.queue.shift()!;
    batch.length = i;
    return batch;
  }

  /** Nothing queued and nothing handed to the socket unwritten. */
  get isFlushed(): boolean {
    return this.queue.length === 0 && this.inflightBytes === 0;
  }

  /**
   * Closes once what is queued has been written (a removed member must still get the message
   * that tells it so), or after `graceMs` at the latest. Not connected: closes at once.
   */
  closeWhenFlushed(graceMs: number, reason = 'association closed'): Promise<void> {
    return new Promise((resolve) => {
      const deadline = Date.now() + graceMs;
      const check = () => {
        if (this.state !== 'ready' || this.isFlushed || Date.now() >= deadline) {
          this.close(reason);
          resolve();
          return;
        }
        setTimeout(check, 5).unref();
      };
      check();
    });
  }

  /** Stops for good: queued messages become dead letters. */
  close(reason = 'association closed'): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    if (this.timer) clearTimeout(this.timer);
    this.socket?.close(CloseCode.goingAway, reason);
    this.socket = undefined;
    for (const e of this.queue.drain()) this.system.deadLetter(e.to, e.message, e.from, 'node-gone');
  }

  /**
   * Dials the target and runs the dialer's half of the handshake: answer the challenge with a
   * hello naming the address dialled, then accept only a welcome that proves the secret over
   * the same transcript and comes from that very address. The uid is not pinned: the
   * association is per address and carries envelopes for whichever incarnation lives there;
   * each envelope's `toUid` is checked by the receiver, which proved its uid in the welcome.
   */
  private connect(): void {
    this.state = 'connecting';
    const tls = this.tls?.();
    const target = formatNodeAddress(this.target);
    const url = `${tls ? 'wss' : 'ws'}://${target}${WS_PATH}`;
    const socket = new WebSocket(url, {
      perMessageDeflate: false,
      // connections are one-way: the dialer only ever receives the challenge and the welcome
      maxPayload: this.config.maxHandshakeFrameBytes,
      handshakeTimeout: this.config.handshakeTimeoutMs,
      autoPong: false,
      generateMask: zeroFrameMask,
      ...(this.localAddress ? { localAddress: this.localAddress } : {}),
      // ws hands these to tls.connect; its types leave out `secureContext`
      ...(tls as WebSocket.ClientOptions | undefined),
    });
    this.socket = socket;
    this.encoder = new BatchEncoder();
    this.inflightBytes = 0;
    const dialledAt = performance.now();
    const deadline = setTimeout(
      () => this.fail(socket, 'timeout', 'handshake timed out'),
      this.config.handshakeTimeoutMs,
    );
    let transcript: Transcript | undefined;
    socket.on('message', (data: Buffer, isBinary: boolean) => {
      if (this.state !== 'connecting' || socket !== this.socket) return;
      let frame: unknown;
      try {
        frame = isBinary ? decodeHandshakeFrame(data) : undefined;
      } catch (error) {
        const reason = error instanceof FrameRejectedError ? error.reason : 'malformed-msgpack';
        return this.fail(socket, reason, `bad handshake frame: ${(error as Error).message}`);
      }
      if (!transcript) {
        const challenge = decodeChallenge(frame);
        if (!challenge) return this.fail(socket, 'bad-challenge', 'expected a challenge frame');
        if (challenge.version !== PROTOCOL_VERSION) {
          return this.fail(
            socket,
            'wrong-version',
            `peer speaks protocol ${challenge.version}, this node ${PROTOCOL_VERSION}`,
            CloseCode.wrongVersion,
          );
        }
        const me = this.system.node;
        const signed = signedHello(
          {
            version: PROTOCOL_VERSION,
            cluster: this.system.cluster,
            host: me.host,
            port: me.port,
            uid: me.uid,
            lane: this.lane,
            target,
            nonce: newNonce(),
          },
          challenge.nonce,
          this.config.secret,
          this.identity,
        );
        transcript = signed.transcript;
        socket.send(encodePlain(encodeHello(signed.hello)));
        return;
      }
      const welcome = decodeWelcome(frame);
      if (!welcome) return this.fail(socket, 'bad-welcome', 'expected a welcome frame');
      const check = welcomeCheck(this.config.secret, welcome, transcript);
      if (check === 'bad-proof') {
        return this.fail(socket, 'bad-proof', 'peer failed to prove the cluster secret', CloseCode.badProof);
      }
      if (check === 'wrong-key') {
        return this.fail(
          socket,
          'wrong-key',
          'welcome not signed by the identity key it names',
          CloseCode.wrongKey,
        );
      }
      const admitted = this.system.peerKeys.get(nodeKey(welcome));
      if (this.config.checkPeerKeys && admitted !== undefined && admitted !== welcome.publicKey) {
        // it knows the secret and answers at the member's address, but lacks the member's key
        return this.fail(
          socket,
          'wrong-key',
          `welcome claims member ${nodeKey(welcome)} with another identity key`,
          CloseCode.wrongKey,
        );
      }
      if (formatNodeAddress(welcome) !== target) {
        // it knows the secret, but it is not the node we dialled (an alias must be configured there)
        return this.fail(
          socket,
          'wrong-peer',
          `welcome from ${formatNodeAddress(welcome)}, dialled ${target}`,
          CloseCode.wrongTarget,
        );
      }
      clearTimeout(deadline);
      this.system.metrics.observe(
        'doyen_wire_handshake_duration_seconds',
        'Outbound connections: from the dial to the verified welcome',
        (performance.now() - dialledAt) / 1000,
        { lane: this.lane },
      );
      this.peer = { host: welcome.host, port: welcome.port, uid: welcome.uid, publicKey: welcome.publicKey };
      this.state = 'ready';
      this.attempts = 0;
      this.dialFailure = undefined;
      this.system.logger.debug(
        { event: 'wire.connected', peer: target, uid: welcome.uid, lane: this.lane },
        `connected to ${target} (${this.lane})`,
      );
      this.scheduleFlush();
    });
    socket.on('error', (error: Error) => {
      // 'close' follows and handles it; without this listener an error event would throw
      if (tls) this.reportTlsFailure(socket, error);
      if (socket === this.socket && this.state === 'connecting') this.dialFailed(error);
    });
    socket.on('close', (code, reason) => {
      clearTimeout(deadline);
      if (socket !== this.socket) return;
      if (this.state === 'connecting' && code >= 4000 && this.failedDial !== socket) {
        this.countFailure('refused', `peer closed with ${code}`, { code });
      }
      this.onDisconnected(code, reason.toString());
    });
  }

  /** Ends a dial that went wrong: counted, logged here, and a reason that tells the peer nothing. */
  private fail(
    socket: WebSocket,
    failure: DialFailure,
    detail: string,
    code: number = CloseCode.policyViolation,
  ): void {
    if (socket !== this.socket) return;
    this.failedDial = socket;
    this.countFailure(failure, detail);
    if (socket.readyState === WebSocket.OPEN) socket.close(code, UNAUTHENTICATED_CLOSE_REASON);
    else socket.terminate();
  }

  /**
   * The dial itself failed (refused, unresolvable host, reset): kept for whoever asks why (a
   * join attempt names it), logged at debug since a member that is down is dialled again and
   * again and its unreachability is reported by the failure detector.
   */
  private dialFailed(error: Error): void {
    const peer = formatNodeAddress(this.target);
    const code = (error as NodeJS.ErrnoException).code;
    this.dialFailure = error.message;
    // Nothing listens there: the process is gone (a paused or cut-off one still accepts, or is silent)
    if (code === 'ECONNREFUSED') this.onRefused?.(this.target);
    this.system.logger.debug(
      { event: 'wire.dial-failed', peer, lane: this.lane, code, error: error.message },
      `dial to ${peer} failed: ${error.message}`,
    );
  }

  private countFailure(failure: DialFailure, detail: string, extra: Record<string, unknown> = {}): void {
    const peer = formatNodeAddress(this.target);
    this.dialFailure = `handshake failed: ${detail}`;
    this.system.logger.warn(
      { event: 'wire.handshake.failed', peer, lane: this.lane, reason: failure, detail, ...extra },
      `handshake with ${peer} failed: ${detail}`,
    );
    this.system.metrics.inc('doyen_wire_handshake_failures_total', 'Outbound handshakes that failed', {
      lane: this.lane,
      reason: failure,
    });
  }

  /** A refused TLS handshake is a failed handshake: logged with OpenSSL's code, counted, then retried. */
  private reportTlsFailure(socket: WebSocket, error: Error): void {
    const failure = dialTlsFailure(error);
    if (!failure || socket !== this.socket || this.state !== 'connecting') return;
    const peer = formatNodeAddress(this.target);
    this.system.logger.warn(
      { event: 'wire.handshake.failed', peer, lane: this.lane, tls: failure.code, reason: failure.reason },
      `TLS handshake with ${peer} failed (${failure.code}): ${failure.reason}`,
    );
    this.system.metrics.inc('doyen_wire_handshake_failures_total', 'Outbound handshakes that failed', {
      lane: this.lane,
    });
  }

  private onDisconnected(code: number, reason: string): void {
    this.socket = undefined;
    if (this.state === 'closed') return;
    const wasReady = this.state === 'ready';
    this.peer = undefined;
    if (wasReady) {
      this.system.logger.debug(
        { event: 'wire.disconnected', peer: formatNodeAddress(this.target), lane: this.lane, code, reason },
        `disconnected from ${formatNodeAddress(this.target)}`,
      );
    }
    if (this.queue.length === 0 && wasReady) {
      this.state = 'idle';
      return;
    }
    this.state = 'backing-off';
    const delay = reconnectDelay(this.config, this.attempts++, this.system.random());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.state !== 'backing-off') return;
      if (this.queue.length === 0) this.state = 'idle';
      else this.connect();
    }, delay);
    this.timer.unref();
  }

  /**
   * `idle`: the socket has written everything, so nothing is gained by waiting for the check
   * phase: flush once the current task is done (a synchronous burst still becomes one batch),
   * which saves a request or reply sent from a check-phase callback (a dispatcher turn) a whole
   * event-loop iteration. Otherwise wait for setImmediate, letting I/O run between flushes.
   */
  private scheduleFlush(idle = false): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    (idle ? queueMicrotask : setImmediate)(this.runFlush);
  }

  private readonly runFlush = (): void => {
    this.flushScheduled = false;
    this.flush();
  };

  private flush(): void {
    const socket = this.socket;
    // A closing socket would swallow what we hand it: keep the queue for the reconnect.
    if (this.state !== 'ready' || !socket || socket.readyState !== WebSocket.OPEN) return;
    if (this.flushing) {
      // reached from inside a flush (a dead letter's listener sending): the outer one goes on
      this.scheduleFlush();
      return;
    }
    // Bounded per turn, so the other lane's flush (and everything else) gets the event loop soon.
    const budgetEnds = this.inflightBytes + FLUSH_BUDGET_BYTES;
    this.flushing = true;
    try {
      while (this.queue.length > 0 && this.inflightBytes < this.config.highWaterBytes) {
        if (this.inflightBytes >= budgetEnds) {
          this.scheduleFlush();
          return;
        }
        this.sendBatch(socket, this.takeBatch());
      }
    } finally {
      this.flushing = false;
    }
  }

  private sendBatch(socket: WebSocket, batch: Envelope[]): void {
    let frame: Buffer;
    try {
      frame = this.encoder.encodeEnvelopes(batch);
    } catch (error) {
      this.unencodable(socket, batch, error as Error);
      return;
    }
    const maxFrameBytes =
      this.lane === 'system' ? this.config.maxSystemFrameBytes : this.config.maxFrameBytes;
    if (frame.length > maxFrameBytes) {
      // The encoder has recorded shapes the peer will never see: reset both sides, then send one by one.
      this.write(socket, this.encoder.reset(), 0);
      this.batchSize = 1;
      if (batch.length === 1) {
        const e = batch[0]!;
        this.system.logger.warn(
          { event: 'wire.message-too-large', to: e.to, messageType: e.message.type, bytes: frame.length },
          `message of ${frame.length} bytes exceeds the ${this.lane} lane's frame limit ${maxFrameBytes}`,
        );
        this.system.deadLetter(e.to, e.message, e.from, 'message-too-large');
        return;
      }
      for (const e of batch) this.sendBatch(socket, [e]);
      return;
    }
    const perEnvelope = frame.length / batch.length;
    this.batchSize = Math.max(
      1,
      Math.min(MAX_ROUTES, Math.floor(this.config.batchBytes / Math.max(perEnvelope, 1))),
    );
    this.write(socket, frame, batch.length);
  }

  /**
   * A batch msgpackr could not encode (a cycle, a BigInt beyond 64 bits, a getter that throws):
   * the encoder may have recorded shapes it never sent, so both sides reset; then the messages
   * go one by one and only the bad one becomes a dead letter. Nothing reaches the event loop.
   */
  private unencodable(socket: WebSocket, batch: Envelope[], error: Error): void {
    this.write(socket, this.encoder.reset(), 0);
    if (batch.length > 1) {
      for (const e of batch) this.sendBatch(socket, [e]);
      return;
    }
    const e = batch[0]!;
    this.system.logger.warn(
      { event: 'wire.encode-failed', to: e.to, messageType: e.message.type, error: error.message },
      `message ${JSON.stringify(e.message.type)} to ${e.to} cannot be encoded: ${error.message}`,
    );
    this.system.metrics.inc('doyen_wire_encode_failures_total', 'Messages that could not be encoded', {
      lane: this.lane,
    });
    this.system.deadLetter(e.to, e.message, e.from, 'unencodable');
  }

  private write(socket: WebSocket, frame: Buffer, messages: number): void {
    this.inflightBytes += frame.length;
    (this.framesSent ??= this.system.metrics.counterSeries('doyen_wire_frames_sent_total', 'Frames sent', {
      lane: this.lane,
    })).value++;
    if (messages > 0) {
      (this.messagesSent ??= this.system.metrics.counterSeries(
        'doyen_wire_messages_sent_total',
        'Messages sent',
        { lane: this.lane },
      )).value += messages;
    }
    socket.send(frame, { binary: true }, () => {
      this.inflightBytes -= frame.length;
      if (this.queue.length > 0 && this.inflightBytes < this.config.highWaterBytes / 2) this.scheduleFlush();
    });
  }
}
