import {
  type ActorSystem,
  type Envelope,
  formatNodeAddress,
  type Lane,
  type NodeAddress,
  RingBuffer,
} from '@doyen/core';
import WebSocket from 'ws';
import { BatchEncoder, decodePlain, encodePlain } from './codec.js';
import { reconnectDelay, type WireConfig } from './config.js';
import {
  decodeChallenge,
  decodeWelcome,
  encodeHello,
  helloProof,
  newNonce,
  proofMatches,
  welcomeProof,
} from './handshake.js';
import { CloseCode, PROTOCOL_VERSION, WS_PATH } from './protocol.js';

/** Bytes encoded per flush turn before yielding to the event loop. */
const FLUSH_BUDGET_BYTES = 128 * 1024;

type State = 'idle' | 'connecting' | 'ready' | 'backing-off' | 'closed';

/** The identity the peer proved in its welcome. */
export interface PeerIdentity {
  readonly host: string;
  readonly port: number;
  readonly uid: string;
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
  private attempts = 0;
  private timer: NodeJS.Timeout | undefined;
  /** Envelopes per frame, adapted to the observed bytes per envelope so frames stay near `batchBytes`. */
  private batchSize = 256;
  peer: PeerIdentity | undefined;

  constructor(
    private readonly system: ActorSystem,
    private readonly config: WireConfig,
    readonly target: NodeAddress,
    readonly lane: Lane,
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
    if (this.state === 'ready') this.scheduleFlush(this.inflightBytes === 0);
    else if (this.state === 'idle') this.connect();
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

  private connect(): void {
    this.state = 'connecting';
    const url = `ws://${formatNodeAddress(this.target)}${WS_PATH}`;
    const socket = new WebSocket(url, {
      perMessageDeflate: false,
      maxPayload: this.config.maxFrameBytes,
      handshakeTimeout: this.config.handshakeTimeoutMs,
    });
    this.socket = socket;
    this.encoder = new BatchEncoder();
    this.inflightBytes = 0;
    const deadline = setTimeout(
      () => this.fail(socket, 'handshake timed out'),
      this.config.handshakeTimeoutMs,
    );
    let helloNonce: Buffer | undefined;
    socket.on('message', (data: Buffer, isBinary: boolean) => {
      if (this.state !== 'connecting' || socket !== this.socket) return;
      try {
        const frame = isBinary ? decodePlain(data) : undefined;
        if (!helloNonce) {
          const challenge = decodeChallenge(frame);
          if (!challenge) return this.fail(socket, 'expected a challenge frame', CloseCode.policyViolation);
          if (challenge.version !== PROTOCOL_VERSION) {
            return this.fail(
              socket,
              `peer speaks protocol ${challenge.version}, this node ${PROTOCOL_VERSION}`,
              CloseCode.wrongVersion,
            );
          }
          helloNonce = newNonce();
          const me = this.system.node;
          const fields = {
            version: PROTOCOL_VERSION,
            cluster: this.system.cluster,
            host: me.host,
            port: me.port,
            uid: me.uid,
            lane: this.lane,
          };
          const proof = helloProof(this.config.secret, fields, challenge.nonce);
          socket.send(encodePlain(encodeHello({ ...fields, nonce: helloNonce, proof })));
          return;
        }
        const welcome = decodeWelcome(frame);
        if (!welcome) return this.fail(socket, 'expected a welcome frame', CloseCode.policyViolation);
        const expected = welcomeProof(this.config.secret, this.system.cluster, welcome, helloNonce);
        if (!proofMatches(expected, welcome.proof)) {
          return this.fail(socket, 'peer failed to prove the cluster secret', CloseCode.badProof);
        }
        clearTimeout(deadline);
        this.peer = { host: welcome.host, port: welcome.port, uid: welcome.uid };
        this.state = 'ready';
        this.attempts = 0;
        this.system.logger.debug(
          {
            event: 'wire.connected',
            peer: formatNodeAddress(this.target),
            uid: welcome.uid,
            lane: this.lane,
          },
          `connected to ${formatNodeAddress(this.target)} (${this.lane})`,
        );
        this.scheduleFlush();
      } catch (error) {
        this.fail(socket, `bad handshake frame: ${(error as Error).message}`, CloseCode.invalidPayload);
      }
    });
    socket.on('error', () => {
      // 'close' follows and handles it; without this listener an error event would throw
    });
    socket.on('close', (code, reason) => {
      clearTimeout(deadline);
      if (socket !== this.socket) return;
      this.onDisconnected(code, reason.toString());
    });
  }

  private fail(socket: WebSocket, reason: string, code: number = CloseCode.policyViolation): void {
    if (socket !== this.socket) return;
    this.system.logger.warn(
      { event: 'wire.handshake.failed', peer: formatNodeAddress(this.target), lane: this.lane, reason },
      `handshake with ${formatNodeAddress(this.target)} failed: ${reason}`,
    );
    this.system.metrics.inc('doyen_wire_handshake_failures_total', 'Outbound handshakes that failed', {
      lane: this.lane,
    });
    if (socket.readyState === WebSocket.OPEN) socket.close(code, reason.slice(0, 120));
    else socket.terminate();
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
    // Bounded per turn, so the other lane's flush (and everything else) gets the event loop soon.
    const budgetEnds = this.inflightBytes + FLUSH_BUDGET_BYTES;
    while (this.queue.length > 0 && this.inflightBytes < this.config.highWaterBytes) {
      if (this.inflightBytes >= budgetEnds) {
        this.scheduleFlush();
        return;
      }
      const count = Math.min(this.queue.length, this.batchSize);
      const batch: Envelope[] = new Array(count);
      for (let i = 0; i < count; i++) batch[i] = this.queue.shift()!;
      this.sendBatch(socket, batch);
    }
  }

  private sendBatch(socket: WebSocket, batch: Envelope[]): void {
    const frame = this.encoder.encode(batch.map(toTuple));
    if (frame.length > this.config.maxFrameBytes) {
      // The encoder has recorded shapes the peer will never see: reset both sides, then send one by one.
      this.write(socket, this.encoder.reset(), 0);
      this.batchSize = 1;
      if (batch.length === 1) {
        const e = batch[0]!;
        this.system.logger.warn(
          { event: 'wire.message-too-large', to: e.to, messageType: e.message.type, bytes: frame.length },
          `message of ${frame.length} bytes exceeds maxFrameBytes ${this.config.maxFrameBytes}`,
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
      Math.min(4096, Math.floor(this.config.batchBytes / Math.max(perEnvelope, 1))),
    );
    this.write(socket, frame, batch.length);
  }

  private write(socket: WebSocket, frame: Buffer, messages: number): void {
    this.inflightBytes += frame.length;
    this.system.metrics.inc('doyen_wire_frames_sent_total', 'Frames sent', { lane: this.lane });
    if (messages > 0) {
      this.system.metrics.inc(
        'doyen_wire_messages_sent_total',
        'Messages sent',
        { lane: this.lane },
        messages,
      );
    }
    socket.send(frame, { binary: true }, () => {
      this.inflightBytes -= frame.length;
      if (this.queue.length > 0 && this.inflightBytes < this.config.highWaterBytes / 2) this.scheduleFlush();
    });
  }
}

function toTuple(e: Envelope): unknown[] {
  return [e.to, e.toUid, e.from ?? null, e.message];
}
