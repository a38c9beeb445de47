import {
  ActorSystem,
  type Envelope,
  formatNodeAddress,
  type Lane,
  type NodeAddress,
  parseNodeAddress,
  RateLimitedLog,
  type RemoteTransport,
  type UniqueNodeAddress,
} from '@doyen/core';
import {
  checkEnvelope,
  decodePlain,
  defaultWireConfig,
  encodePlain,
  type RejectReason,
  reportRejected,
  withDecodingSystem,
} from '@doyen/wire';
import { SimNetworkError } from './errors.js';
import type { SeededRandom } from './seeded-random.js';
import type { VirtualClock } from './virtual-clock.js';

/** A node as the network knows it: its `host:port`, its address, or its actor system. */
export type NodeLike = string | NodeAddress | ActorSystem;

export interface NetworkFaults {
  /** Base one-way latency in ms. */
  readonly latencyMs: number;
  /** Latency varies uniformly within ± this many ms (never below 0). */
  readonly jitterMs: number;
  /** Probability that a message is lost. */
  readonly dropRate: number;
  /** Probability that a message arrives twice. */
  readonly duplicateRate: number;
  /**
   * Let jitter reorder messages of one link. Off by default: the wire runs over one ordered
   * connection per peer and lane, so messages of a link arrive in the order they were sent.
   */
  readonly reorder: boolean;
  /** Larger encoded messages become dead letters at the sender, as on the wire. */
  readonly maxMessageBytes: number;
  /**
   * A send to an address where no node lives (crashed, never started) is refused, as a dial to a
   * closed port is (ECONNREFUSED), and the sender's transport reports it. Off: such sends vanish
   * silently, as behind a firewall that drops rather than rejects.
   */
  readonly refuseDeadAddresses: boolean;
}

export const defaultNetworkFaults: NetworkFaults = {
  latencyMs: 1,
  jitterMs: 0.5,
  dropRate: 0,
  duplicateRate: 0,
  reorder: false,
  maxMessageBytes: defaultWireConfig.maxFrameBytes,
  refuseDeadAddresses: true,
};

/** Why a message did not reach its recipient's actor system. */
export type DropReason =
  /** random loss (`dropRate`) */
  | 'loss'
  /** the link was blocked by a partition when sent or while in flight */
  | 'partitioned'
  /** no live node at the target address (never started, or crashed) */
  | 'no-such-node'
  /** the sender crashed or is not part of the network */
  | 'sender-down'
  | 'message-too-large'
  | 'encode-failed'
  /** refused at the receiving boundary, exactly as the wire refuses it */
  | RejectReason;

export interface NetworkEvent {
  readonly kind: 'send' | 'deliver' | 'drop' | 'duplicate' | 'hold';
  readonly time: number;
  /** `host:port` of the sending and receiving nodes. */
  readonly from: string;
  readonly to: string;
  readonly lane: Lane;
  /** Recipient path. */
  readonly path: string;
  readonly messageType: string;
  readonly reason?: DropReason;
}

export interface NetworkStats {
  /** Messages handed to the network by senders (duplicates not included). */
  readonly sent: number;
  /** Extra copies made by `duplicateRate`. */
  readonly duplicated: number;
  /** Messages handed to the receiving actor system after validation. */
  readonly delivered: number;
  readonly dropped: Readonly<Partial<Record<DropReason, number>>>;
  readonly droppedTotal: number;
  /** Scheduled for arrival. */
  readonly inFlight: number;
  /** Held by a paused node (inbound or outbound). */
  readonly held: number;
}

/** One encoded message on its way; the bytes are all the receiver gets. */
interface Packet {
  readonly from: string;
  /** The sender's incarnation: what a real connection would have authenticated. */
  readonly fromUid: string;
  readonly to: string;
  readonly lane: Lane;
  readonly path: string;
  readonly messageType: string;
  readonly bytes: Buffer;
}

interface SimNode {
  readonly key: string;
  readonly system: ActorSystem;
  paused: boolean;
  pausedUntil: number;
  resumeTimer: number | undefined;
  /** Arrived while paused, in arrival order (the kernel's socket buffer of a stopped process). */
  readonly heldIn: Packet[];
  /** Sent while paused, in send order. */
  readonly heldOut: Packet[];
}

/**
 * An in-memory network between the actor systems of one simulation, implementing core's
 * `RemoteTransport`. Messages are encoded and validated as the wire does, so nothing passes by
 * reference and bad input is refused at the same boundary; they arrive on the `VirtualClock`
 * after a seeded latency, subject to loss, duplication, partitions, crashes and pauses.
 */
export class SimNetwork {
  private readonly nodes = new Map<string, SimNode>();
  /** Directed links `from>to` that are blocked. */
  private readonly blocked = new Set<string>();
  /** Latest arrival scheduled per link and lane: later messages never arrive before it (FIFO). */
  private readonly lastArrival = new Map<string, number>();
  private readonly listeners = new Set<(event: NetworkEvent) => void>();
  private faults: NetworkFaults;
  private counts = { sent: 0, duplicated: 0, delivered: 0, inFlight: 0 };
  private readonly dropped: Partial<Record<DropReason, number>> = {};
  private readonly rejectLogs = new WeakMap<ActorSystem, RateLimitedLog>();
  /** Who hears of each node's refused dials (RemoteTransport.onConnectionRefused). */
  private readonly refusedListeners = new WeakMap<ActorSystem, Set<(node: NodeAddress) => void>>();
  /** Links `from>to` with a refusal on its way: one at a time, as a real dial waits for its answer. */
  private readonly refusing = new Set<string>();

  constructor(
    private readonly clock: VirtualClock,
    private readonly random: SeededRandom,
    faults: Partial<NetworkFaults> = {},
  ) {
    this.faults = validateFaults({ ...defaultNetworkFaults, ...faults });
  }

  /** Changes fault settings from now on (messages in flight keep their arrival time). */
  configure(faults: Partial<NetworkFaults>): void {
    this.faults = validateFaults({ ...this.faults, ...faults });
  }

  get settings(): NetworkFaults {
    return this.faults;
  }

  /**
   * Joins `system` to the network under its `host:port` and returns its transport. A terminated
   * system at the same address is replaced (a restart); a live one is an error.
   */
  transportFor(system: ActorSystem): RemoteTransport {
    const key = system.nodeName;
    const existing = this.nodes.get(key);
    if (existing && existing.system !== system && !existing.system.isTerminated) {
      throw new SimNetworkError(`a live node already runs at ${key}; crash it first`);
    }
    if (!existing || existing.system !== system) {
      if (existing) this.remove(existing);
      this.nodes.set(key, {
        key,
        system,
        paused: false,
        pausedUntil: 0,
        resumeTimer: undefined,
        heldIn: [],
        heldOut: [],
      });
    }
    return {
      send: (node, envelope, lane) => this.send(system, node, envelope, lane),
      onConnectionRefused: (listener) => {
        let listeners = this.refusedListeners.get(system);
        if (!listeners) this.refusedListeners.set(system, (listeners = new Set()));
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
    };
  }

  /** Records every send, hold, delivery and drop; returns the unsubscribe function. */
  observe(listener: (event: NetworkEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get stats(): NetworkStats {
    let held = 0;
    for (const n of this.nodes.values()) held += n.heldIn.length + n.heldOut.length;
    const dropped = { ...this.dropped };
    const droppedTotal = Object.values(dropped).reduce((a, b) => a + (b ?? 0), 0);
    return { ...this.counts, dropped, droppedTotal, held };
  }

  // ---- nodes ----------------------------------------------------------------------------------

  /** `host:port` of every live node, in join order. */
  get nodeNames(): string[] {
    return [...this.nodes.keys()];
  }

  systemAt(node: NodeLike): ActorSystem | undefined {
    return this.nodes.get(nameOfNode(node))?.system;
  }

  isPaused(node: NodeLike): boolean {
    return this.nodes.get(nameOfNode(node))?.paused ?? false;
  }

  /**
   * Kills a node: it leaves the network at once (messages to it are dropped, messages it holds
   * are lost, anything it sends while dying is dropped) and its actor system is terminated.
   * Messages it sent before the crash are already on the wire and still arrive.
   */
  crash(node: NodeLike): ActorSystem {
    const n = this.require(node);
    this.remove(n);
    n.system.terminate();
    return n.system;
  }

  /**
   * Stops a node as SIGSTOP would, for `ms` (Infinity: until `resume`): what arrives for it is
   * held, and so is what it sends; both are released in order when it resumes. The clock is
   * shared, so its timers still fire and its actors still run; only its traffic is frozen.
   */
  pause(node: NodeLike, ms: number): void {
    const n = this.require(node);
    if (!(ms >= 0)) throw new SimNetworkError(`pause needs ms >= 0, got ${ms}`);
    const until = Math.max(n.paused ? n.pausedUntil : 0, this.clock.now() + ms);
    n.paused = true;
    n.pausedUntil = until;
    if (n.resumeTimer !== undefined) this.clock.clearTimeout(n.resumeTimer);
    n.resumeTimer = Number.isFinite(until)
      ? this.clock.setTimeoutAt(until, () => this.resume(n.key))
      : undefined;
  }

  /** Ends a pause: held inbound messages are delivered, then held outbound ones are sent. */
  resume(node: NodeLike): void {
    const n = this.nodes.get(nameOfNode(node));
    if (!n?.paused) return;
    n.paused = false;
    if (n.resumeTimer !== undefined) this.clock.clearTimeout(n.resumeTimer);
    n.resumeTimer = undefined;
    for (const packet of n.heldIn.splice(0)) {
      if (this.nodes.get(n.key) === n) this.hand(n, packet);
    }
    for (const packet of n.heldOut.splice(0)) this.transmit(packet);
  }

  // ---- partitions -----------------------------------------------------------------------------

  /** Cuts every link between the two groups, both directions. */
  partition(groupA: readonly NodeLike[], groupB: readonly NodeLike[]): void {
    for (const a of groupA) {
      for (const b of groupB) {
        this.blocked.add(linkKey(nameOfNode(a), nameOfNode(b)));
        this.blocked.add(linkKey(nameOfNode(b), nameOfNode(a)));
      }
    }
  }

  /** Asymmetric fault: `from` can no longer reach `to`, the other direction still works. */
  blockOneWay(from: NodeLike, to: NodeLike): void {
    this.blocked.add(linkKey(nameOfNode(from), nameOfNode(to)));
  }

  /** Restores the link between two nodes in both directions. */
  healLink(a: NodeLike, b: NodeLike): void {
    this.blocked.delete(linkKey(nameOfNode(a), nameOfNode(b)));
    this.blocked.delete(linkKey(nameOfNode(b), nameOfNode(a)));
  }

  /** Restores every link. */
  heal(): void {
    this.blocked.clear();
  }

  isBlocked(from: NodeLike, to: NodeLike): boolean {
    return this.blocked.has(linkKey(nameOfNode(from), nameOfNode(to)));
  }

  // ---- the path of a message ------------------------------------------------------------------

  private send(sender: ActorSystem, node: UniqueNodeAddress, envelope: Envelope, lane: Lane): void {
    this.counts.sent++;
    const from = sender.nodeName;
    const base = { from, fromUid: sender.node.uid, to: formatNodeAddress(node), lane, path: envelope.to };
    const messageType = typeof envelope.message?.type === 'string' ? envelope.message.type : '?';
    const self = this.nodes.get(from);
    if (!self || self.system !== sender) {
      this.drop({ ...base, messageType, bytes: Buffer.alloc(0) }, 'sender-down');
      return;
    }
    let bytes: Buffer;
    try {
      bytes = encodePlain(
        envelope.trace === undefined
          ? [envelope.to, envelope.toUid, envelope.from ?? null, envelope.message]
          : [envelope.to, envelope.toUid, envelope.from ?? null, envelope.message, envelope.trace],
      );
    } catch (error) {
      sender.logger.warn(
        { event: 'wire.encode-failed', to: envelope.to, messageType, err: error },
        `cannot encode ${messageType} for ${envelope.to}`,
      );
      this.drop({ ...base, messageType, bytes: Buffer.alloc(0) }, 'encode-failed');
      return;
    }
    const packet: Packet = { ...base, messageType, bytes };
    if (bytes.length > this.faults.maxMessageBytes) {
      sender.logger.warn(
        { event: 'wire.message-too-large', to: envelope.to, messageType, bytes: bytes.length },
        `message of ${bytes.length} bytes exceeds maxFrameBytes ${this.faults.maxMessageBytes}`,
      );
      sender.deadLetter(envelope.to, envelope.message, envelope.from, 'message-too-large');
      this.drop(packet, 'message-too-large');
      return;
    }
    this.emit('send', packet);
    if (self.paused) {
      self.heldOut.push(packet);
      this.emit('hold', packet);
      return;
    }
    this.transmit(packet);
  }

  /** Puts a packet on the wire: partitions, loss and duplication are decided here. */
  private transmit(packet: Packet): void {
    if (this.blocked.has(linkKey(packet.from, packet.to))) {
      this.drop(packet, 'partitioned');
      return;
    }
    if (!this.nodes.has(packet.to)) {
      this.drop(packet, 'no-such-node');
      this.refuse(packet);
      return;
    }
    if (this.random.chance(this.faults.dropRate)) {
      this.drop(packet, 'loss');
      return;
    }
    this.schedule(packet);
    if (this.random.chance(this.faults.duplicateRate)) {
      this.counts.duplicated++;
      this.emit('duplicate', packet);
      this.schedule(packet);
    }
  }

  /**
   * Nothing listens at the target (crashed, or never started): as a real dial there is refused,
   * the sender hears so one round trip later. A paused node still accepts and a partition drops,
   * so neither refuses, as on the wire. No random draw: seeded runs keep their sequence.
   */
  private refuse(packet: Packet): void {
    const link = linkKey(packet.from, packet.to);
    const sender = this.nodes.get(packet.from)?.system;
    if (!this.faults.refuseDeadAddresses || !sender || this.refusing.has(link)) return;
    if (!this.refusedListeners.get(sender)?.size) return;
    this.refusing.add(link);
    const node = parseNodeAddress(packet.to);
    this.clock.setTimeout(() => {
      this.refusing.delete(link);
      // a node restarted at the address meanwhile is listening again; a dead sender hears nothing
      if (this.nodes.has(packet.to) || this.nodes.get(packet.from)?.system !== sender) return;
      for (const listener of this.refusedListeners.get(sender) ?? []) listener(node);
    }, 2 * this.faults.latencyMs);
  }

  private schedule(packet: Packet): void {
    const { latencyMs, jitterMs, reorder } = this.faults;
    const spread = jitterMs > 0 ? (this.random.next() * 2 - 1) * jitterMs : 0;
    let at = this.clock.now() + Math.max(0, latencyMs + spread);
    if (!reorder) {
      const link = `${linkKey(packet.from, packet.to)}|${packet.lane}`;
      at = Math.max(at, this.lastArrival.get(link) ?? at);
      this.lastArrival.set(link, at);
    }
    this.counts.inFlight++;
    this.clock.setTimeoutAt(at, () => {
      this.counts.inFlight--;
      this.arrive(packet);
    });
  }

  private arrive(packet: Packet): void {
    if (this.blocked.has(linkKey(packet.from, packet.to))) {
      this.drop(packet, 'partitioned');
      return;
    }
    const target = this.nodes.get(packet.to);
    if (!target) {
      this.drop(packet, 'no-such-node');
      return;
    }
    if (target.paused) {
      target.heldIn.push(packet);
      this.emit('hold', packet);
      return;
    }
    this.hand(target, packet);
  }

  /** The receiving boundary: decode with refs bound to the receiver, validate, deliver. */
  private hand(target: SimNode, packet: Packet): void {
    const system = target.system;
    let raw: unknown;
    try {
      raw = withDecodingSystem(system, () => decodePlain(packet.bytes));
    } catch (error) {
      this.reject(target, packet, 'malformed-msgpack', (error as Error).message);
      return;
    }
    const origin = { ...parseNodeAddress(packet.from), uid: packet.fromUid };
    const checked = checkEnvelope(system, raw, origin);
    if (!checked.ok) {
      this.reject(target, packet, checked.reason, checked.detail);
      return;
    }
    if (checked.dropped) this.reject(target, packet, checked.dropped.reason, checked.dropped.detail);
    this.counts.delivered++;
    this.emit('deliver', packet);
    system.receiveRemote(checked.envelope, origin);
  }

  private reject(target: SimNode, packet: Packet, reason: RejectReason, detail: string): void {
    const system = target.system;
    let log = this.rejectLogs.get(system);
    if (!log) {
      log = new RateLimitedLog(system.logger, () => this.clock.now(), 1000);
      this.rejectLogs.set(system, log);
    }
    reportRejected(system, log, reason, detail, packet.from);
    this.drop(packet, reason);
  }

  private drop(packet: Packet, reason: DropReason): void {
    this.dropped[reason] = (this.dropped[reason] ?? 0) + 1;
    this.emit('drop', packet, reason);
  }

  private emit(kind: NetworkEvent['kind'], packet: Packet, reason?: DropReason): void {
    if (this.listeners.size === 0) return;
    const { from, to, lane, path, messageType } = packet;
    const event: NetworkEvent = {
      kind,
      time: this.clock.now(),
      from,
      to,
      lane,
      path,
      messageType,
      ...(reason ? { reason } : {}),
    };
    for (const listener of this.listeners) listener(event);
  }

  private require(node: NodeLike): SimNode {
    const n = this.nodes.get(nameOfNode(node));
    if (!n) throw new SimNetworkError(`no live node at ${nameOfNode(node)}`);
    return n;
  }

  /** Takes a node off the network; what it held is lost. */
  private remove(n: SimNode): void {
    this.nodes.delete(n.key);
    if (n.resumeTimer !== undefined) this.clock.clearTimeout(n.resumeTimer);
    n.paused = false;
    for (const packet of n.heldIn.splice(0)) this.drop(packet, 'no-such-node');
    for (const packet of n.heldOut.splice(0)) this.drop(packet, 'sender-down');
  }
}

/** The `host:port` a simulated node is known by on the network. */
export function nameOfNode(node: NodeLike): string {
  if (typeof node === 'string') return node;
  return node instanceof ActorSystem ? node.nodeName : formatNodeAddress(node);
}

function linkKey(from: string, to: string): string {
  return `${from}>${to}`;
}

function validateFaults(f: NetworkFaults): NetworkFaults {
  const rate = (name: keyof NetworkFaults, v: number) => {
    if (!(v >= 0 && v <= 1)) throw new SimNetworkError(`${name} must be in [0, 1], got ${v}`);
  };
  rate('dropRate', f.dropRate);
  rate('duplicateRate', f.duplicateRate);
  if (!(f.latencyMs >= 0 && Number.isFinite(f.latencyMs)))
    throw new SimNetworkError(`latencyMs must be a finite number >= 0, got ${f.latencyMs}`);
  if (!(f.jitterMs >= 0 && Number.isFinite(f.jitterMs)))
    throw new SimNetworkError(`jitterMs must be a finite number >= 0, got ${f.jitterMs}`);
  if (!(f.maxMessageBytes > 0)) throw new SimNetworkError(`maxMessageBytes must be > 0`);
  return f;
}
