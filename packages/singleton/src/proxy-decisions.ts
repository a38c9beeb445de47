import { type Membership, memberKey } from '@doyen/cluster';
import type { ActorRef, DecisionStep, LogEffect, Message } from '@doyen/core';
import type { HandOverStarted, Identity } from './messages.js';

/**
 * The singleton proxy's decisions as pure functions of (context, event): the predicates its
 * guards ask and each step's next context with its effects as data. The machine
 * (proxy-machine.ts) wires them to states and delays; its one action `run` executes the effects
 * (identify, forward, drain, dead-letter, log), so its paths can be enumerated and replayed.
 *
 * The rule they keep is exactly-once delivery across a hand-over: a message told to the proxy
 * is forwarded once, in the order its sender told it, or dead-lettered when the buffer
 * overflows; and before the proxy stops forwarding to an inbox it sends that inbox a `drained`
 * marker behind everything it forwarded there, which the former host waits for.
 */

export type ProxyEvent =
  | { readonly type: 'singleton.membership'; readonly membership: Membership }
  | HandOverStarted
  | Identity
  | Message;

export interface ProxyContext {
  /** Key of the member the placement puts the singleton on, as of the last membership. */
  readonly oldestKey: string | undefined;
  /** The instance's inbox while forwarding; undefined while identifying. */
  readonly target: ActorRef | undefined;
  /** Messages told while no instance is known, oldest first. */
  readonly buffer: readonly Message[];
  readonly dropped: number;
}

export const initialProxyContext: ProxyContext = {
  oldestKey: undefined,
  target: undefined,
  buffer: [],
  dropped: 0,
};

/** What a decision depends on besides the context. */
export interface ProxyPolicy {
  readonly name: string;
  /** Messages kept while no instance is known; beyond it the oldest go to dead letters. */
  readonly bufferSize: number;
  /** Key of the member the placement puts the singleton on. */
  readonly hostKeyOf: (membership: Membership) => string | undefined;
}

/** What the machine's action `run` carries out. */
export type ProxyEffect =
  /** Identify to the manager on the member `hostKey`, replies to this proxy. */
  | { readonly kind: 'identify'; readonly hostKey: string }
  /** One message to the instance's inbox (a producer span when OpenTelemetry traces). */
  | { readonly kind: 'forward'; readonly to: ActorRef; readonly message: Message }
  /** The `drained` marker to an inbox, behind everything forwarded there: "nothing more from me". */
  | { readonly kind: 'drained'; readonly to: ActorRef }
  /** A message the proxy gives up on, to dead letters (addressed to the proxy). */
  | {
      readonly kind: 'dead-letter';
      readonly message: Message;
      readonly reason: 'mailbox-overflow-dropped-oldest';
    }
  | LogEffect<'warn'>;

export type ProxyStep = DecisionStep<ProxyContext, ProxyEffect>;

const same = (context: ProxyContext): ProxyStep => ({ context, effects: [] });

// ---- what the event and context say ----------------------------------------------------------

/** The proxy's own protocol; every other event is a message for the singleton. */
export function isControl(event: ProxyEvent): boolean {
  return (
    event.type === 'singleton.membership' ||
    event.type === 'singleton.hand-over-started' ||
    event.type === 'singleton.identity'
  );
}

/** The membership names another host than the one we follow. */
export function hostChanged(policy: ProxyPolicy, ctx: ProxyContext, event: ProxyEvent): boolean {
  return event.type === 'singleton.membership' && hostKeyIn(policy, event) !== ctx.oldestKey;
}

/** An identity is believed only from the node we take for the host (it names its inbox). */
export function identityFromHost(ctx: ProxyContext, event: ProxyEvent): boolean {
  return (
    event.type === 'singleton.identity' && memberKey((event as Identity).inbox.address.node) === ctx.oldestKey
  );
}

/** A hand-over is announced by the node we forward to. */
export function startedByTarget(ctx: ProxyContext, event: ProxyEvent): boolean {
  return (
    event.type === 'singleton.hand-over-started' &&
    ctx.target !== undefined &&
    memberKey((event as HandOverStarted).inbox.address.node) === memberKey(ctx.target.address.node)
  );
}

function hostKeyIn(policy: ProxyPolicy, event: ProxyEvent): string | undefined {
  return policy.hostKeyOf((event as { readonly membership: Membership }).membership);
}

// ---- steps -----------------------------------------------------------------------------------

/** Behind everything forwarded to `inbox` so far, on the same lane. */
const drainedTo = (inbox: ActorRef | undefined): ProxyEffect[] =>
  inbox ? [{ kind: 'drained', to: inbox }] : [];

/** Stops forwarding: the context without a target. */
const withoutTarget = (ctx: ProxyContext): ProxyContext =>
  ctx.target === undefined ? ctx : { ...ctx, target: undefined };

/**
 * The host changed: follow the new one (identified on entering `identifying`); an inbox we
 * forwarded to is told we are done with it.
 */
export function followHost(policy: ProxyPolicy, ctx: ProxyContext, event: ProxyEvent): ProxyStep {
  if (event.type !== 'singleton.membership') return same(ctx);
  return {
    context: { ...withoutTarget(ctx), oldestKey: hostKeyIn(policy, event) },
    effects: drainedTo(ctx.target),
  };
}

/** Ask the host's manager where its instance is (nothing to ask without a host). */
export function identify(ctx: ProxyContext): ProxyStep {
  if (ctx.oldestKey === undefined) return same(ctx);
  return { context: ctx, effects: [{ kind: 'identify', hostKey: ctx.oldestKey }] };
}

/** No instance known: keep the message; beyond the buffer's size the oldest go to dead letters. */
export function bufferMessage(policy: ProxyPolicy, ctx: ProxyContext, event: ProxyEvent): ProxyStep {
  if (isControl(event)) return same(ctx);
  const buffer = [...ctx.buffer, event as Message];
  const effects: ProxyEffect[] = [];
  let dropped = ctx.dropped;
  while (buffer.length > policy.bufferSize) {
    const oldest = buffer.shift()!;
    dropped++;
    effects.push(
      {
        kind: 'log',
        level: 'warn',
        event: 'singleton.proxy-buffer-full',
        fields: { singleton: policy.name, bufferSize: policy.bufferSize },
        msg: `singleton ${policy.name}: proxy buffer full, dropping the oldest message`,
      },
      { kind: 'dead-letter', message: oldest, reason: 'mailbox-overflow-dropped-oldest' },
    );
  }
  return { context: { ...ctx, buffer, dropped }, effects };
}

/** The host's instance is known: forward to it from now on, the buffer first, in order. */
export function takeIdentity(ctx: ProxyContext, event: ProxyEvent): ProxyStep {
  if (event.type !== 'singleton.identity') return same(ctx);
  const inbox = (event as Identity).inbox;
  return {
    context: { ...ctx, target: inbox, buffer: [] },
    effects: ctx.buffer.map((message) => ({ kind: 'forward', to: inbox, message })),
  };
}

/** Forwarding: a message for the singleton goes straight to its inbox. */
export function forward(ctx: ProxyContext, event: ProxyEvent): ProxyStep {
  if (isControl(event) || ctx.target === undefined) return same(ctx);
  return { context: ctx, effects: [{ kind: 'forward', to: ctx.target, message: event as Message }] };
}

/**
 * A hand-over started: drain towards the inbox it names (the one we may have forwarded to) and
 * stop forwarding; what comes next is buffered until the new instance is identified.
 */
export function handOverStarted(ctx: ProxyContext, event: ProxyEvent): ProxyStep {
  if (event.type !== 'singleton.hand-over-started') return same(ctx);
  return { context: withoutTarget(ctx), effects: drainedTo((event as HandOverStarted).inbox) };
}
