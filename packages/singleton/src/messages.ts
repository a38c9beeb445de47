import { type ActorRef, type MessageTypes, read, schema } from '@doyen/core';

/** New oldest -> former oldest: stop your instance and tell me (Akka's HandOverToMe). */
export interface HandOverToMe {
  readonly type: 'singleton.hand-over-to-me';
  readonly name: string;
  readonly replyTo: ActorRef;
}

/** Former oldest -> new oldest: the instance is stopped; here is its last state, if enabled. */
export interface HandedOver {
  readonly type: 'singleton.handed-over';
  readonly name: string;
  readonly snapshot: unknown;
  /** The former oldest (member key): a hand-over is believed only from the one asked. */
  readonly from: string;
}

/** Proxy -> oldest's manager: where do I send? Answered once the instance runs. */
export interface Identify {
  readonly type: 'singleton.identify';
  readonly name: string;
  readonly replyTo: ActorRef;
}

export interface Identity {
  readonly type: 'singleton.identity';
  readonly name: string;
  /** The inbox to forward to (on the user lane); messages pass through it to the instance. */
  readonly inbox: ActorRef;
}

/** Former oldest's manager -> proxies: stop sending to me, drain, then buffer for the new one. */
export interface HandOverStarted {
  readonly type: 'singleton.hand-over-started';
  readonly name: string;
  /** Where the drained marker goes: the inbox this proxy may have forwarded to. */
  readonly inbox: ActorRef;
}

/**
 * Proxy -> the former oldest's inbox, on the user lane behind everything it forwarded there:
 * "nothing more from me". The hand-over waits for these, so no message is lost or reordered.
 */
export interface Drained {
  readonly type: 'singleton.drained';
  readonly proxy: string;
}

export type SingletonProtocol = HandOverToMe | HandedOver | Identify | Identity | HandOverStarted | Drained;

const name = read.matching(/^[A-Za-z0-9_.-]{1,64}$/, 'a singleton name');

/**
 * Rebuilt from their fields; each speaks only for the node it came from. Hand-overs and
 * identities travel between members (`member`: the manager's protocol decides which member it
 * believes). Any node may send the two that concern only itself: an identify asks where the
 * instance's inbox is, answered to the asker (a proxy on a node the host does not know yet keeps
 * working), and a drain marker ends the wait for its own proxy only (one from a node just taken
 * out of the view must still end it, or the hand-over waits for the drain timeout).
 */
export function registerSingletonMessages(types: MessageTypes): void {
  types.register(
    'singleton.hand-over-to-me',
    schema<HandOverToMe>({ name, replyTo: read.ref }, (m) => [m.replyTo], 'member'),
  );
  types.register(
    'singleton.identify',
    schema<Identify>({ name, replyTo: read.ref }, (m) => [m.replyTo], 'anyone'),
  );
  types.register(
    'singleton.handed-over',
    schema<HandedOver>({ name, snapshot: read.plainData(), from: read.memberKey }, (m) => [m.from], 'member'),
  );
  types.register(
    'singleton.identity',
    schema<Identity>({ name, inbox: read.ref }, (m) => [m.inbox], 'member'),
  );
  types.register(
    'singleton.hand-over-started',
    schema<HandOverStarted>({ name, inbox: read.ref }, (m) => [m.inbox], 'member'),
  );
  types.register(
    'singleton.drained',
    schema<Drained>({ proxy: read.memberKey }, (m) => [m.proxy], 'anyone'),
  );
}
