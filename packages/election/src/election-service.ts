import { type ActorSystem, formatNodeAddress, type LocalActorRef, type Message } from '@doyen/core';
import { definitionOf } from './algorithms.js';
import {
  ELECTION_PATH,
  type ElectionOptions,
  type ElectionPeer,
  type LeaderView,
  type PeersChanged,
  type ResolvedElectionOptions,
  resolveElectionOptions,
} from './election.js';

const SENT_TOTAL = 'doyen_election_messages_sent_total';
const SENT_HELP = 'Election messages sent, by algorithm and type.';

const LOOKING: LeaderView = { role: 'looking', leader: undefined, term: 0, acting: false };

/**
 * One node's participation in a leader election: runs the chosen algorithm's machine at
 * `/system/election`, counts what it sends, logs `election.leader` whenever its view changes and
 * tells subscribers. The same class runs on real sockets and in the simulation.
 */
export class Election {
  readonly options: ResolvedElectionOptions;
  readonly self: ElectionPeer;
  private readonly ref: LocalActorRef;
  private current: LeaderView = LOOKING;
  private readonly listeners = new Set<(view: LeaderView) => void>();
  private sent = 0;
  private readonly sentTypes = new Map<string, number>();
  private stopped = false;
  /** `host:port` of the peers now: only they may send election messages (`election-peer`). */
  private peerAddresses: ReadonlySet<string>;
  private readonly uninstallAuthority: () => void;

  private constructor(
    readonly system: ActorSystem,
    options: ElectionOptions,
  ) {
    this.options = resolveElectionOptions(options);
    const self = this.options.peers.find(
      (p) => p.node.host === system.node.host && p.node.port === system.node.port,
    );
    if (!self) throw new Error(`election peers must include this node (${system.nodeName})`);
    this.self = self;
    const definition = definitionOf(this.options.algorithm);
    definition.registerMessages(system.messageTypes);
    this.peerAddresses = new Set(this.options.peers.map((p) => formatNodeAddress(p.node)));
    this.uninstallAuthority = system.messageTypes.defineAuthority('election-peer', (_key, origin) =>
      this.peerAddresses.has(formatNodeAddress(origin)),
    );
    const algorithm = this.options.algorithm;
    const machine = definition.createMachine({
      system,
      self,
      options: this.options,
      send: (to, message) => {
        if (this.stopped) return;
        this.sent++;
        this.sentTypes.set(message.type, (this.sentTypes.get(message.type) ?? 0) + 1);
        system.metrics.inc(SENT_TOTAL, SENT_HELP, { algorithm, type: message.type });
        if (to.address === self.address) this.ref.send(message);
        else system.anyIncarnationRef(to.node, ELECTION_PATH).send(message);
      },
      report: (view) => this.update(view),
    });
    this.ref = system.spawn(machine, { name: ELECTION_PATH.split('/')[2]!, parent: 'system' });
  }

  /** Starts this node's election machine. */
  static start(system: ActorSystem, options: ElectionOptions): Election {
    return new Election(system, options);
  }

  /** This node's current belief. */
  view(): LeaderView {
    return this.current;
  }

  /** The leader this node follows (itself when leading), if any. */
  leader(): string | undefined {
    return this.current.leader;
  }

  /** Leading and allowed to act (see {@link LeaderView.acting}). */
  isActing(): boolean {
    return this.current.acting;
  }

  /** Messages this node's election has sent so far. */
  get messagesSent(): number {
    return this.sent;
  }

  /** Messages sent so far by type (heartbeats are `election.<algorithm>.heartbeat*`). */
  sentByType(): ReadonlyMap<string, number> {
    return this.sentTypes;
  }

  /** Calls `listener` with every new view (not the current one). */
  subscribe(listener: (view: LeaderView) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  setPeers(peers: readonly ElectionPeer[]): void {
    this.peerAddresses = new Set(peers.map((p) => formatNodeAddress(p.node)));
    const changed: PeersChanged = { type: 'election.peers', peers };
    this.ref.send(changed as unknown as Message);
  }

  /** The machine's snapshot value, for the inspector and tests. */
  machineState(): unknown {
    return (this.system.snapshotOf(this.ref) as { value?: unknown } | undefined)?.value;
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.uninstallAuthority();
    this.system.stop(this.ref);
    this.listeners.clear();
  }

  private update(view: LeaderView): void {
    const c = this.current;
    if (
      c.role === view.role &&
      c.leader === view.leader &&
      c.term === view.term &&
      c.acting === view.acting
    ) {
      return;
    }
    this.current = view;
    this.system.logger.info(
      {
        event: 'election.leader',
        algorithm: this.options.algorithm,
        node: this.self.address,
        role: view.role,
        leader: view.leader ?? null,
        term: view.term,
        acting: view.acting,
      },
      view.leader === undefined
        ? `election: looking for a leader (term ${view.term})`
        : `election: ${view.role === 'leading' ? 'leading' : `following ${view.leader}`} (term ${view.term}${view.acting ? ', acting' : ''})`,
    );
    for (const listener of [...this.listeners]) listener(view);
  }
}
