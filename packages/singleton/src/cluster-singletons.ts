import { type Cluster, type Membership, memberKey } from '@doyen/cluster';
import {
  type ActorRef,
  type ActorSystem,
  DoyenError,
  type LocalActorRef,
  type Message,
  type SpawnOptions,
} from '@doyen/core';
import type { AnyActorLogic, EventFromLogic } from 'xstate';
import { LeasedOldestPlacement } from './leased-placement.js';
import { createManagerMachine, managerPath, proxyPath } from './manager-machine.js';
import { registerSingletonMessages } from './messages.js';
import type { SingletonLeaseView, SingletonPlacement } from './placement.js';
import { createProxyMachine } from './proxy-machine.js';

export interface SingletonOptions {
  /** Run only on the oldest member with this role. */
  readonly role?: string;
  readonly input?: unknown;
  /** Pass the instance's persisted xstate snapshot to the new oldest on a graceful hand-over. */
  readonly handOverSnapshot?: boolean;
  /** The new oldest re-asks for the hand-over this often… */
  readonly handOverRetryIntervalMs?: number;
  /** …and logs a stuck hand-over after this many attempts (it then waits for the removal). */
  readonly maxHandOverRetries?: number;
  /** Wait after the former oldest was downed; default the cluster's down-removal margin. */
  readonly downRemovalMarginMs?: number;
  /** Proxy buffer while no instance is known (default 1000; the oldest are dropped). */
  readonly bufferSize?: number;
  /** Refuse proxy asks with NotEnoughMembers below this many reachable members. */
  readonly minimumClusterSize?: number;
  readonly mailbox?: SpawnOptions['mailbox'];
}

export class SingletonNameTakenError extends DoyenError {
  constructor(name: string) {
    super(`a singleton named ${name} is already registered on this node`, 'singleton-name-taken');
  }
}

export interface SingletonInfo {
  readonly name: string;
  /** `host:port` of the node that runs it, as this node knows it. */
  readonly oldest: string | null;
  readonly runsHere: boolean;
  readonly managerState: unknown;
  /** A leased placement's state on this node. */
  readonly lease?: SingletonLeaseView;
}

interface Registered {
  readonly name: string;
  readonly role: string | undefined;
  readonly manager: LocalActorRef;
  readonly proxy: LocalActorRef;
  instance: LocalActorRef | undefined;
}

/**
 * Cluster singletons of one node: each registered singleton gets a manager (runs the instance
 * when this node is the oldest) and a proxy (the ref everyone uses). Register the same
 * singletons on every node.
 */
export class ClusterSingletons {
  private readonly registered = new Map<string, Registered>();
  private membership: Membership | undefined;

  readonly placement: SingletonPlacement;

  /**
   * `placement` decides where singletons run: by default the oldest member fenced by a majority
   * host lease (`LeasedOldestPlacement`), or an elected coordinator (see `@doyen/election`'s
   * `ElectedCoordinator`), or the unfenced oldest (`oldestPlacement`).
   */
  constructor(
    readonly system: ActorSystem,
    readonly cluster: Cluster,
    placement?: SingletonPlacement,
  ) {
    this.placement = placement ?? new LeasedOldestPlacement(system, cluster);
    registerSingletonMessages(system.messageTypes);
    cluster.subscribeMembership((m) => {
      this.membership = m;
      this.tellAll(m);
    });
    // a member this node stops reaching may move singletons before any downing (a leased or
    // elected placement): everyone looks again with this node's own view
    cluster.subscribe((event) => {
      if ((event.type === 'member.unreachable' || event.type === 'member.reachable') && this.membership)
        this.tellAll(this.membership);
    });
    // same membership, new answer (an election's leader changed): everyone looks again
    this.placement.subscribe(() => {
      if (this.membership) this.tellAll(this.membership);
    });
  }

  private tellAll(membership: Membership): void {
    for (const r of this.registered.values()) this.tell(r, membership);
  }

  /** A membership with this node's own view of who is unreachable. */
  private viewed(membership: Membership): Membership {
    return { ...membership, unreachable: this.cluster.unreachableHere() };
  }

  /** A membership (and the placement's mandate for this singleton) to its manager and proxy. */
  private tell(r: Pick<Registered, 'role' | 'manager' | 'proxy'>, raw: Membership): void {
    const membership = this.viewed(raw);
    const mandate = this.placement.mayRun?.(r.role) ?? true;
    const blockedBy = this.placement.blockerOf?.(r.role);
    r.manager.send({ type: 'singleton.membership', membership, mandate, blockedBy } as Message);
    r.proxy.send({ type: 'singleton.membership', membership } as Message);
  }

  /** Running instances per role, for a leased placement (a host keeps its lease while one runs). */
  private reportHosting(role: string | undefined): void {
    const running = [...this.registered.values()].filter((r) => r.role === role && r.instance).length;
    this.placement.hosting?.(role, running);
  }

  /** Registers a singleton; returns its proxy: `send` and `ask` work from any node. */
  register<TLogic extends AnyActorLogic>(
    name: string,
    logic: TLogic,
    options: SingletonOptions = {},
  ): ActorRef<EventFromLogic<TLogic> & Message> {
    if (this.registered.has(name)) throw new SingletonNameTakenError(name);
    const { system, cluster } = this;
    const instancePath = `/user/singleton-${name}`;
    const inboxName = `singleton-${name}`;
    let instance: LocalActorRef | undefined;
    const registered: Partial<Registered> = { name, role: options.role };
    const effects = {
      startInstance: (snapshot: unknown) => {
        instance = system.spawn(logic, {
          name: `singleton-${name}-instance`,
          ...(options.input !== undefined ? { input: options.input } : {}),
          ...(options.mailbox ? { mailbox: options.mailbox } : {}),
          ...(snapshot ? { snapshot } : {}),
        });
        (registered as Registered).instance = instance;
        this.reportHosting(options.role);
        // The inbox forwards to the instance and reports proxies' drained markers to the manager.
        system.removeFunctionRef(system.remoteRef(system.node, instancePath));
        system.functionRef(
          inboxName,
          (message) => {
            if (message.type === 'singleton.drained') {
              manager.send({
                type: 'singleton.drain-progress',
                proxy: (message as unknown as { proxy: string }).proxy,
              });
            } else {
              instance?.send(message);
            }
          },
          'user',
        );
      },
      stopInstance: (reason: string) => {
        const ref = instance;
        if (!ref) return undefined;
        const snapshot = options.handOverSnapshot ? system.persistedSnapshotOf(ref) : undefined;
        system.stop(ref);
        system.removeFunctionRef(system.remoteRef(system.node, instancePath));
        instance = undefined;
        (registered as Registered).instance = undefined;
        this.reportHosting(options.role);
        system.logger.info(
          { event: 'singleton.stopped', singleton: name, reason },
          `singleton ${name} stopped (${reason})`,
        );
        return snapshot;
      },
      instanceBacklog: () => (instance ? system.mailboxSize(instance) : 0),
      inbox: system.remoteRef(system.node, instancePath),
    };
    const manager = system.spawn(
      createManagerMachine(
        system,
        {
          name,
          role: options.role,
          handOverRetryIntervalMs: options.handOverRetryIntervalMs ?? 100,
          maxHandOverRetries: options.maxHandOverRetries ?? 50,
          downRemovalMarginMs: () => options.downRemovalMarginMs ?? cluster.downRemovalMarginMs(),
          drainTimeoutMs: 1000,
          placement: this.placement,
        },
        effects,
      ),
      { name: managerPath(name).split('/')[2]!, parent: 'system' },
    );
    const proxy = system.spawn(
      createProxyMachine(system, {
        name,
        role: options.role,
        bufferSize: options.bufferSize ?? 1000,
        identifyIntervalMs: 100,
        placement: this.placement,
      }),
      { name: proxyPath(name).split('/')[2]!, parent: 'system' },
    );
    Object.assign(registered, { manager, proxy });
    this.registered.set(name, registered as Registered);
    this.placement.addRole?.(options.role);
    if (this.membership) this.tell(registered as Registered, this.membership);
    return this.guarded(proxy, options.minimumClusterSize) as unknown as ActorRef<
      EventFromLogic<TLogic> & Message
    >;
  }

  /** The proxy of a registered singleton. */
  proxy<M extends Message = Message>(name: string): ActorRef<M> | undefined {
    return this.registered.get(name)?.proxy as ActorRef<M> | undefined;
  }

  list(): SingletonInfo[] {
    return [...this.registered.values()].map((r) => {
      const oldest = this.membership ? this.placement.hostOf(this.membership, r.role) : undefined;
      return {
        name: r.name,
        oldest: oldest?.address ?? null,
        runsHere: r.instance !== undefined,
        managerState: (this.system.snapshotOf(r.manager) as { value?: unknown } | undefined)?.value,
        ...(this.placement.leaseOf ? { lease: this.placement.leaseOf(r.role) } : {}),
      };
    });
  }

  /** Where a singleton runs as this node knows it (member key), for tests and tools. */
  oldestKey(name: string): string | undefined {
    const r = this.registered.get(name);
    const o = r && this.membership ? this.placement.hostOf(this.membership, r.role) : undefined;
    return o && memberKey(o);
  }

  /** Wraps the proxy so that asks are refused with NotEnoughMembers below the minimum. */
  private guarded(proxy: LocalActorRef, minimum: number | undefined): ActorRef {
    if (minimum === undefined) return proxy;
    const cluster = this.cluster;
    const ask = proxy.ask.bind(proxy);
    return Object.assign(Object.create(proxy) as LocalActorRef, {
      ask: (build: never, opts?: never) => {
        cluster.requireQuorum(minimum);
        return ask(build, opts);
      },
    });
  }
}
