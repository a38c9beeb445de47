import type { AnyActorLogic } from 'xstate';
import type { CellRuntime, RuntimeHost } from './cell-runtime.js';
import { toError } from './errors.js';
import type { Message } from './message.js';
import type { Reducer } from './transition-logic.js';

/** xstate's snapshot of transition logic: always active, the reducer's state as its context. */
interface TransitionSnapshot {
  readonly status: 'active';
  readonly output: undefined;
  readonly error: undefined;
  readonly context: unknown;
}

/**
 * What inspectors see in place of an xstate actor: the fields the Stately inspector and doyen's
 * bridge read (`id`, `sessionId`, `logic`, `_parent`, `getSnapshot`). Every doyen actor is the
 * root of its own xstate system, whose first session id is `x:0`; this one says the same.
 */
class InspectedTransitionActor {
  readonly sessionId = 'x:0';
  readonly _parent = undefined;

  constructor(
    readonly id: string,
    readonly logic: AnyActorLogic,
    private readonly runtime: TransitionRuntime,
  ) {}

  getSnapshot(): unknown {
    return this.runtime.getSnapshot();
  }

  toJSON(): { xstate$$type: 1; id: string } {
    return { xstate$$type: 1, id: this.id };
  }
}

const NONE: unique symbol = Symbol('none');

/**
 * Runs transition logic on the cell itself: the reducer is called on each message taken from the
 * mailbox, with nothing else per message unless someone observes. Snapshots are built on demand
 * (one per new state, kept while the state is unchanged). With an inspector attached it emits what
 * xstate's actor would: `@xstate.actor`, then `@xstate.event` and `@xstate.snapshot` per message.
 */
export class TransitionRuntime implements CellRuntime {
  private state: unknown;
  private active = false;
  private listening = false;
  private snapshot: TransitionSnapshot | undefined;
  private snapshotOf: unknown = NONE;
  private inspected: InspectedTransitionActor | undefined;

  constructor(
    private readonly host: RuntimeHost,
    private readonly logic: AnyActorLogic,
    private readonly reduce: Reducer,
  ) {}

  start(persisted: unknown, input: unknown): void {
    const logic = this.logic;
    let initial: { context: unknown };
    try {
      // xstate's transition logic reads neither argument's actor scope: no scope to build here.
      initial =
        persisted !== undefined
          ? (logic.restoreSnapshot?.(persisted as never, undefined as never) ?? persisted)
          : logic.getInitialSnapshot(undefined as never, input);
    } catch (error) {
      this.host.failed(toError(error));
      return;
    }
    this.state = initial.context;
    this.snapshotOf = NONE;
    this.active = true;
    const inspect = this.host.inspect;
    if (inspect) {
      const actorRef = new InspectedTransitionActor(this.host.path, logic, this);
      this.inspected = actorRef;
      const rootId = actorRef.sessionId;
      inspect({ type: '@xstate.actor', actorRef: actorRef as never, rootId });
      const init = { type: 'xstate.init', input };
      inspect({
        type: '@xstate.event',
        sourceRef: undefined,
        actorRef: actorRef as never,
        event: init,
        rootId,
      });
      this.published(init);
    } else if (this.listening) this.published(undefined);
  }

  run(max: number): number {
    if (this.listening || this.host.inspect !== undefined) return this.runObserved(max);
    const mailbox = this.host.mailbox;
    const reduce = this.reduce;
    let state = this.state;
    let n = 0;
    try {
      while (n < max) {
        const message = mailbox.takeMessage();
        if (message === undefined) break;
        n++;
        state = reduce(state, message);
      }
    } catch (error) {
      this.host.failed(toError(error));
      return n;
    }
    this.state = state;
    return n;
  }

  runOne(message: Message): boolean {
    // observed, the mailbox path publishes what an inspector and listeners expect
    if (!this.active || this.listening || this.host.inspect !== undefined) return false;
    try {
      this.state = this.reduce(this.state, message);
    } catch (error) {
      this.host.failed(toError(error));
    }
    return true;
  }

  /** The same loop, publishing each new snapshot to listeners and inspector. */
  private runObserved(max: number): number {
    const host = this.host;
    const inspect = host.inspect;
    const actorRef = this.inspected as never;
    let n = 0;
    while (n < max && host.running) {
      const message = host.mailbox.takeMessage();
      if (message === undefined) break;
      n++;
      inspect?.({ type: '@xstate.event', sourceRef: undefined, actorRef, event: message, rootId: 'x:0' });
      try {
        this.state = this.reduce(this.state, message);
      } catch (error) {
        host.failed(toError(error));
        return n;
      }
      this.published(message);
    }
    return n;
  }

  private published(event: { type: string } | undefined): void {
    const snapshot = this.getSnapshot();
    if (this.listening) this.host.emit(snapshot);
    const inspect = this.host.inspect;
    if (inspect && event) {
      const actorRef = this.inspected as never;
      inspect({ type: '@xstate.snapshot', actorRef, event, snapshot: snapshot as never, rootId: 'x:0' });
    }
  }

  getSnapshot(): TransitionSnapshot | undefined {
    if (!this.active) return undefined;
    if (this.snapshotOf !== this.state) {
      this.snapshot = { status: 'active', output: undefined, error: undefined, context: this.state };
      this.snapshotOf = this.state;
    }
    return this.snapshot;
  }

  getPersistedSnapshot(): unknown {
    const snapshot = this.getSnapshot();
    return snapshot === undefined ? undefined : this.logic.getPersistedSnapshot(snapshot as never);
  }

  setListening(listening: boolean): void {
    this.listening = listening;
  }

  discard(): void {
    this.active = false;
    this.state = undefined;
  }

  stop(): void {
    this.discard();
  }
}
