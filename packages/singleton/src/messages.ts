import { ActorRef, type Message, type MessageTypes, type UniqueNodeAddress } from '@doyen/core';

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

const isRef = (v: unknown) => v instanceof ActorRef;
const isName = (v: unknown) => typeof v === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(v);

export function registerSingletonMessages(types: MessageTypes): void {
  const need =
    (fields: Record<string, (v: unknown) => boolean>) =>
    (m: Message): string | undefined => {
      const r = m as unknown as Record<string, unknown>;
      for (const [k, test] of Object.entries(fields)) if (!test(r[k])) return `bad field ${k}`;
      return undefined;
    };
  types.register(['singleton.hand-over-to-me', 'singleton.identify'], need({ name: isName, replyTo: isRef }));
  types.register('singleton.handed-over', need({ name: isName }));
  types.register('singleton.identity', need({ name: isName, inbox: isRef }));
  types.register('singleton.hand-over-started', need({ name: isName, inbox: isRef }));
  types.register('singleton.drained', need({ proxy: (v) => typeof v === 'string' && v.length < 400 }));
}

export function nodeKey(node: UniqueNodeAddress): string {
  return `${node.host.includes(':') ? `[${node.host}]` : node.host}:${node.port}#${node.uid}`;
}
