import { isIP } from 'node:net';
import { checkServerIdentity, type TLSSocket } from 'node:tls';
import {
  type ActorSystem,
  type AuthenticatedNode,
  type CounterSeries,
  formatNodeAddress,
  type Lane,
  nodeKey,
  parseNodeAddress,
  RingBuffer,
} from '@doyen/core';
import type WebSocket from 'ws';
import { FIRST_ENTRY } from './batch-frame.js';
import { BatchDecoder, decodeHandshakeFrame, encodePlain } from './codec.js';
import type { WireConfig } from './config.js';
import { FrameRejectedError } from './frame-scan.js';
import {
  type Challenge,
  decodeHello,
  encodeChallenge,
  encodeWelcome,
  helloCheck,
  helloVersion,
  newNonce,
  signedWelcome,
  transcriptOf,
} from './handshake.js';
import type { DecodeTask, InboundScheduler } from './inbound-scheduler.js';
import type { NodeIdentity } from './node-identity.js';
import {
  CLOSE_CODE_OF,
  CloseCode,
  type ClosingRejectReason,
  closeReasonText,
  PROTOCOL_VERSION,
  type RejectReason,
  UNAUTHENTICATED_CLOSE_REASON,
} from './protocol.js';
import { setReceiveLimit } from './receive-limit.js';
import {
  type BatchHeader,
  EnvelopeMemo,
  type EnvelopeRefusal,
  KnownSenders,
  readBatchHeader,
  readMessage,
} from './validation.js';

/** Envelopes delivered between two looks at the clock while a frame is worked through. */
const ENVELOPES_PER_CLOCK_CHECK = 32;
/** Frames waiting to be decoded at which the socket is paused (TCP backpressure to the sender). */
const INBOUND_PAUSE_FRAMES = 2;

/** Callbacks from an inbound connection to the transport that owns it. */
export interface InboundHooks {
  /** Fault injection (tests, demos): true while traffic from this peer address must vanish. */
  readonly blackholed?: (peerAddress: string) => boolean;
  readonly reject: (reason: RejectReason, detail: string, peer: string) => void;
  readonly handshakeDone: (connection: InboundConnection) => void;
  /** Called exactly once, when the socket has closed, whatever the state. */
  readonly closed: (connection: InboundConnection) => void;
  /** The node's one decode budget, shared by all its inbound connections in turn. */
  readonly scheduler: Pick<InboundScheduler<InboundConnection>, 'wake'>;
}

/**
 * The accepting side of one connection: it challenges the dialer, verifies its hello, then
 * validates every frame and envelope before handing messages to the actor system. Any
 * violation is counted, logged and answered with a drop or a close; nothing else happens.
 */
export class InboundConnection implements DecodeTask {
  private state: 'awaiting-hello' | 'open' | 'closed' = 'awaiting-hello';
  private readonly challenge: Challenge = { version: PROTOCOL_VERSION, nonce: newNonce() };
  private readonly decoder: BatchDecoder;
  private readonly deadline: NodeJS.Timeout;
  lane: Lane | undefined;
  peerName: string;
  /** Frames waiting for their turn: decoded under a time budget so no connection holds the event loop. */
  private readonly pending = new RingBuffer<Buffer>(16);
  /** In the scheduler's queue (see DecodeTask). */
  queued = false;
  /** The decoded frame being delivered, a slice per turn, its validated header, and the next entry's index. */
  private batch: readonly unknown[] | undefined;
  private header: BatchHeader | undefined;
  private cursor = 0;
  /** The largest frame accepted once open (the lane's limit, see limitFrames). */
  private openFrameLimit: number;
  private peerAddress: string | undefined;
  /** The node incarnation this connection authenticated as (set once the hello is verified). */
  private origin: AuthenticatedNode | undefined;
  /** What the previous envelope was found to be (see EnvelopeMemo). */
  private readonly memo = new EnvelopeMemo();
  /** The sender addresses found to be on the peer's node (see KnownSenders). */
  private readonly senders = new KnownSenders();
  /** This lane's received-messages counter, taken at the first delivery (see Metrics.counterSeries). */
  private messagesReceived: CounterSeries | undefined;
  /** Counts and logs one refused envelope (or its dropped trace): bound once, not per envelope. */
  private readonly refuseEnvelope: EnvelopeRefusal = ({ reason, detail }) =>
    this.hooks.reject(reason, detail, this.peerName);

  /** Who the peer proved to be, once the handshake is done. */
  get authenticatedAs(): AuthenticatedNode | undefined {
    return this.origin;
  }

  constructor(
    private readonly system: ActorSystem,
    private readonly config: WireConfig,
    private readonly socket: WebSocket,
    /** `ip:port` the connection comes from. */
    private readonly remote: string,
    /** The `host:port` names a hello may target: the advertised address and the aliases. */
    private readonly ownAddresses: ReadonlySet<string>,
    private readonly hooks: InboundHooks,
    /** This node's identity key: the welcome is signed with it. */
    private readonly identity: NodeIdentity,
  ) {
    this.peerName = remote;
    this.openFrameLimit = config.maxFrameBytes;
    this.decoder = new BatchDecoder(config.maxNestingDepth);
    setReceiveLimit(socket, config.maxHandshakeFrameBytes);
    this.deadline = setTimeout(
      () => this.close('handshake-timeout', 'no valid hello in time'),
      config.handshakeTimeoutMs,
    );
    this.deadline.unref();
    socket.on('message', (data: Buffer, isBinary: boolean) => this.onFrame(data, isBinary));
    socket.on('error', (error: Error & { code?: string }) => {
      if (error.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH') {
        const limit = this.isOpen ? this.openFrameLimit : config.maxHandshakeFrameBytes;
        this.hooks.reject('frame-too-large', `frame over ${limit} bytes`, this.peerName);
      }
      // ws closes the socket itself after protocol errors; 'close' does the bookkeeping
    });
    socket.once('close', () => {
      clearTimeout(this.deadline);
      this.state = 'closed';
      this.pending.drain();
      this.batch = undefined;
      this.header = undefined;
      this.hooks.closed(this);
    });
    socket.send(encodePlain(encodeChallenge(this.challenge)));
  }

  get isOpen(): boolean {
    return this.state === 'open';
  }

  /**
   * Lowers (or raises) the largest frame accepted from now on: the transport sets the lane's
   * limit once the handshake is done (the system lane's is smaller).
   */
  limitFrames(bytes: number): void {
    this.openFrameLimit = bytes;
    setReceiveLimit(this.socket, bytes);
  }

  /**
   * Closes for a violation (counted under `reason`), a shutdown, or because a newer connection of
   * the same identity and lane replaced this one (a reconnect whose old socket lingered).
   */
  close(reason: ClosingRejectReason | 'shutdown' | 'replaced', detail: string): void {
    if (this.state === 'closed') return;
    const authenticated = this.state === 'open';
    this.state = 'closed';
    clearTimeout(this.deadline);
    this.pending.drain();
    this.batch = undefined;
    if (reason === 'shutdown') {
      this.socket.close(CloseCode.goingAway, 'node shutting down');
    } else if (reason === 'replaced') {
      this.socket.close(CloseCode.replaced, closeReasonText(detail));
    } else {
      this.hooks.reject(reason, detail, this.peerName);
      // an unauthenticated peer learns nothing from the reason text (the code says enough)
      this.socket.close(
        CLOSE_CODE_OF[reason],
        authenticated ? closeReasonText(detail) : UNAUTHENTICATED_CLOSE_REASON,
      );
    }
    // a peer that ignores the close handshake is cut off
    setTimeout(() => this.socket.terminate(), 1000).unref();
  }

  private onFrame(data: Buffer, isBinary: boolean): void {
    if (this.state === 'closed') return;
    if (!isBinary) {
      this.close('text-frame', 'binary frames only');
      return;
    }
    if (this.state === 'awaiting-hello') this.onHello(data);
    else this.enqueue(data);
  }

  /**
   * A flood must not hold the event loop, on either lane: Node reads many chunks per socket per
   * turn, so frames are queued and worked through under the node's one decode budget (see
   * InboundScheduler), and the socket is paused (TCP backpressure to the sender) while the queue
   * is long. Every other connection (another node's heartbeats) gets its turn in between.
   */
  private enqueue(data: Buffer): void {
    this.pending.push(data);
    if (this.pending.length >= INBOUND_PAUSE_FRAMES && !this.socket.isPaused) this.socket.pause();
    this.hooks.scheduler.wake(this);
  }

  /** A decoded frame is only partly delivered (see DecodeTask). */
  get midFrame(): boolean {
    return this.batch !== undefined;
  }

  /** One turn's slice: the rest of the current frame (or the next one) until `deadline`. */
  runSlice(deadline: number): boolean {
    if (this.state !== 'open') return false;
    if (this.batch === undefined) {
      const data = this.pending.shift();
      if (data === undefined) return false;
      this.decodeFrame(data);
      if (this.pending.length < INBOUND_PAUSE_FRAMES && this.socket.isPaused && this.state === 'open')
        this.socket.resume();
    }
    if (this.batch !== undefined) this.deliverSlice(deadline);
    return this.state === 'open' && (this.batch !== undefined || this.pending.length > 0);
  }

  private onHello(data: Buffer): void {
    // ws enforces this limit already when it can (see setReceiveLimit); this is the fallback
    if (data.length > this.config.maxHandshakeFrameBytes) {
      this.close('frame-too-large', `handshake frame of ${data.length} bytes`);
      return;
    }
    let frame: unknown;
    try {
      frame = decodeHandshakeFrame(data);
    } catch (error) {
      const reason = error instanceof FrameRejectedError ? error.reason : 'malformed-msgpack';
      this.close(reason, `undecodable hello: ${(error as Error).message}`);
      return;
    }
    const version = helloVersion(frame);
    if (version !== undefined && version !== PROTOCOL_VERSION) {
      this.close('wrong-version', `protocol ${version} not supported (this node speaks ${PROTOCOL_VERSION})`);
      return;
    }
    const hello = decodeHello(frame);
    if (!hello) {
      // a batch frame is [toUid, routes, …] (an older one: [envelope, …])
      const looksLikeBatch = Array.isArray(frame) && (Array.isArray(frame[1]) || Array.isArray(frame[0]));
      if (looksLikeBatch) this.close('before-handshake', 'messages before the handshake');
      else this.close('bad-handshake', 'first frame must be a hello');
      return;
    }
    this.peerName = nodeKey(hello);
    if (hello.cluster !== this.system.cluster) {
      this.close(
        'wrong-cluster',
        `cluster ${JSON.stringify(hello.cluster)} is not ${JSON.stringify(this.system.cluster)}`,
      );
      return;
    }
    if (!this.ownAddresses.has(hello.target)) {
      // a hello meant for another node: relayed by whoever the dialer reached instead
      this.close('wrong-target', `hello addressed to ${JSON.stringify(hello.target)}, not to this node`);
      return;
    }
    const transcript = transcriptOf(hello, this.challenge.nonce);
    const check = helloCheck(this.config.secret, hello, transcript);
    if (check === 'bad-proof') {
      this.close('bad-proof', 'bad proof of the cluster secret');
      return;
    }
    if (check === 'wrong-key') {
      this.close('wrong-key', 'hello not signed by the identity key it names');
      return;
    }
    const admitted = this.system.peerKeys.get(this.peerName);
    if (this.config.checkPeerKeys && admitted !== undefined && admitted !== hello.publicKey) {
      // a holder of the shared secret speaking as a member whose private key it lacks
      this.close('wrong-key', `hello claims member ${this.peerName} with another identity key`);
      return;
    }
    const certificateProblem = this.config.tls?.bindIdentity
      ? certificateMismatch(this.socket, hello.host)
      : undefined;
    if (certificateProblem !== undefined) {
      this.close('certificate-mismatch', `hello claims ${hello.host}: ${certificateProblem}`);
      return;
    }
    if (this.config.verifyPeerAddress && !claimsItsSource(hello.host, this.remote)) {
      // a secret holder claiming another node's identity: its address is not the one it names
      this.close('wrong-source', `hello claims ${hello.host} but comes from ${this.remote}`);
      return;
    }
    clearTimeout(this.deadline);
    // answered as the name the dialer used (the advertised address or an alias): the dialer checks it
    const answeredAs = parseNodeAddress(hello.target);
    const welcome = signedWelcome(
      { host: answeredAs.host, port: answeredAs.port, uid: this.system.node.uid },
      transcript,
      this.config.secret,
      this.identity,
    );
    this.socket.send(encodePlain(encodeWelcome(welcome)));
    setReceiveLimit(this.socket, this.config.maxFrameBytes);
    this.lane = hello.lane;
    this.peerAddress = formatNodeAddress(hello);
    this.origin = { host: hello.host, port: hello.port, uid: hello.uid, publicKey: hello.publicKey };
    this.state = 'open';
    this.hooks.handshakeDone(this);
  }

  /** Decodes one frame: a batch to deliver (from the next slice on), a reset, or a close. */
  private decodeFrame(data: Buffer): void {
    let batch: unknown;
    try {
      batch = this.decoder.decode(this.system, data);
    } catch (error) {
      const reason = error instanceof FrameRejectedError ? error.reason : 'malformed-msgpack';
      this.close(reason, `undecodable frame: ${(error as Error).message}`);
      return;
    }
    if (batch === 'reset') return;
    // decoded all the same: the record definitions in it must not be lost
    if (this.peerAddress !== undefined && this.hooks.blackholed?.(this.peerAddress)) return;
    if (!Array.isArray(batch)) {
      this.close('bad-batch', 'a frame must be an array of envelopes');
      return;
    }
    // the header and routes are checked once; a frame they refuse is dropped whole
    const header = readBatchHeader(this.system, batch, this.origin!, this.senders, this.refuseEnvelope);
    if (header === undefined) return;
    this.batch = batch;
    this.header = header;
    this.cursor = FIRST_ENTRY;
  }

  /**
   * Validates and delivers messages of the current batch until it ends or `deadline` passes:
   * each one's route index against the validated routes, then the message itself.
   */
  private deliverSlice(deadline: number): void {
    const batch = this.batch!;
    const { toUid, routes } = this.header!;
    const lane = this.lane!;
    const origin = this.origin!;
    let accepted = 0;
    let i = this.cursor;
    let sinceCheck = 0;
    while (i < batch.length && this.state === 'open') {
      const index: unknown = batch[i];
      const raw: unknown = batch[i + 1];
      i += 2;
      // not an own index of the array (negative, fractional, beyond): undefined; a refused route: null
      const route = typeof index === 'number' ? routes[index] : undefined;
      if (route === undefined) {
        this.refuseEnvelope({ reason: 'bad-envelope', detail: 'route index out of range' });
      } else if (route !== null) {
        const message = readMessage(this.system, raw, origin, this.memo, this.refuseEnvelope);
        if (message !== undefined) {
          accepted++;
          const { to, from, trace } = route;
          this.system.receiveRemote(
            trace === undefined ? { to, toUid, from, message } : { to, toUid, from, message, trace },
            origin,
          );
        }
      }
      if (++sinceCheck === ENVELOPES_PER_CLOCK_CHECK) {
        sinceCheck = 0;
        if (performance.now() >= deadline) break;
      }
    }
    this.cursor = i;
    if (i >= batch.length) {
      this.batch = undefined;
      this.header = undefined;
    }
    if (accepted > 0) {
      (this.messagesReceived ??= this.system.metrics.counterSeries(
        'doyen_wire_messages_received_total',
        'Messages received',
        { lane },
      )).value += accepted;
    }
  }
}

/**
 * Why the peer's TLS certificate does not name `host` (Node's own SAN matching, as a client
 * checks a server), or undefined when it does. No certificate at all counts as a mismatch.
 */
function certificateMismatch(socket: WebSocket, host: string): string | undefined {
  // ws keeps the transport socket as `_socket`; with wire.tls it is the TLSSocket of the upgrade
  const tls = (socket as unknown as { _socket?: TLSSocket })._socket;
  const certificate =
    tls && typeof tls.getPeerCertificate === 'function' ? tls.getPeerCertificate() : undefined;
  if (!certificate || Object.keys(certificate).length === 0) return 'no peer certificate';
  const bare = host.startsWith('[') ? host.slice(1, -1) : host;
  return checkServerIdentity(bare, certificate)?.message;
}

/** Whether a hello's host, when it is an IP address, is the address the connection comes from. */
function claimsItsSource(host: string, remote: string): boolean {
  const bare = host.startsWith('[') ? host.slice(1, -1) : host;
  if (isIP(bare) === 0) return true;
  const source = remote.slice(0, remote.lastIndexOf(':')).replace(/^::ffff:/i, '');
  return normalizeIp(source) === normalizeIp(bare.replace(/^::ffff:/i, ''));
}

function normalizeIp(ip: string): string {
  return isIP(ip) === 6 ? new URL(`http://[${ip}]/`).hostname : ip;
}
