import {
  type AnyActorLogic,
  type AnyActorRef,
  createActor,
  type InspectionEvent,
  type Observer,
  type Subscription,
} from 'xstate';
import type { CellRuntime, RuntimeHost } from './cell-runtime.js';
import { toError } from './errors.js';
import type { Message } from './message.js';

/** Runs any xstate logic in an xstate actor, fed one message at a time from the cell's mailbox. */
export class XstateRuntime implements CellRuntime {
  private actor: AnyActorRef | undefined;
  private listening = false;
  private next: Subscription | undefined;
  private stopping = false;

  constructor(
    private readonly host: RuntimeHost,
    private readonly logic: AnyActorLogic,
    /** The system's observer as xstate takes it. */
    private readonly inspect: Observer<InspectionEvent> | ((event: InspectionEvent) => void) | undefined,
  ) {}

  start(snapshot: unknown, input: unknown): void {
    const host = this.host;
    const actor = createActor(this.logic, {
      input,
      ...(snapshot !== undefined ? { snapshot: snapshot as never } : {}),
      clock: host.clock,
      id: host.path,
      ...(this.inspect ? { inspect: this.inspect } : {}),
    });
    this.actor = actor;
    this.stopping = false;
    // An error observer on every actor: xstate would otherwise rethrow on a timer and crash the process.
    // Given as listeners, not as an observer object: xstate binds an object's methods to it and keeps
    // both, ~1.2 KB more per actor than the two listeners (issue 31: per-actor memory).
    actor.subscribe(
      undefined,
      (error) => host.failed(toError(error)),
      () => {
        if (!this.stopping && this.actor === actor) host.completed();
      },
    );
    // Snapshots are observed only while someone listens: xstate calls every observer per message.
    if (this.listening) this.next = actor.subscribe((s) => host.emit(s));
    actor.start();
  }

  run(max: number): number {
    const mailbox = this.host.mailbox;
    const actor = this.actor;
    if (actor === undefined) return 0;
    let n = 0;
    // A failure, a stop or completion during a send takes the actor away (discard/stop): the batch
    // ends there, as it would on the cell's status, with one field read per message instead of two.
    while (n < max && this.actor === actor) {
      const message = mailbox.takeMessage();
      if (message === undefined) break;
      n++;
      actor.send(message);
    }
    return n;
  }

  runOne(message: Message): boolean {
    const actor = this.actor;
    if (actor === undefined) return false;
    actor.send(message);
    return true;
  }

  getSnapshot(): unknown {
    return this.actor?.getSnapshot();
  }

  getPersistedSnapshot(): unknown {
    const actor = this.actor as { getPersistedSnapshot?: () => unknown } | undefined;
    return actor?.getPersistedSnapshot?.();
  }

  setListening(listening: boolean): void {
    this.listening = listening;
    if (listening && !this.next && this.actor) this.next = this.actor.subscribe((s) => this.host.emit(s));
    if (!listening) {
      this.next?.unsubscribe();
      this.next = undefined;
    }
  }

  discard(): void {
    this.actor = undefined;
    this.next = undefined;
  }

  stop(): void {
    const actor = this.actor;
    this.actor = undefined;
    this.next = undefined;
    if (!actor) return;
    this.stopping = true;
    try {
      actor.stop();
    } catch {
      // stopping a broken actor must not prevent the cell's bookkeeping
    }
  }
}
