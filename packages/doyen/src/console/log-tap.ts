import type { Logger } from '@doyen/core';
import { pino } from 'pino';
import { toPlain } from '../inspector/safe-json.js';
import { LOG_SEQ_FIELD } from '../node-logger.js';
import { CONSOLE_CAPS, type WireEvent } from './console-messages.js';

/** Keys every pino line has (the node logger's line number too), or the event itself: not repeated in `fields`. */
const OWN_KEYS = new Set(['level', 'time', 'pid', 'hostname', 'node', 'msg', 'event', LOG_SEQ_FIELD]);
const FIELD_LIMITS = { maxDepth: 3, maxItems: 16, maxString: 200, maxNodes: 64 } as const;
const EVENT_NAME = /^[A-Za-z0-9_.:-]{1,64}$/;

interface WritableLike {
  write(chunk: unknown, ...rest: unknown[]): boolean;
}

/**
 * The node's timeline: the structured log lines that carry an `event` field (cluster events,
 * downing decisions, singleton hand-overs, …), read where the logger writes them so that no
 * call site changes. Lines of another node sharing the stream (tests run several in a process)
 * are skipped by their `node` field. Nothing is kept here: each event goes to `onEvent`, whose
 * owner bounds what it keeps.
 */
export class LogTap {
  private active = true;
  private readonly stream: WritableLike | undefined;
  private readonly original: WritableLike['write'] | undefined;
  private readonly tapped: WritableLike['write'] | undefined;

  constructor(
    logger: Logger,
    /** `host:port`: lines naming another node are not this node's. */
    private readonly node: string,
    private readonly onEvent: (event: WireEvent) => void,
  ) {
    const stream = (logger as unknown as Record<symbol, unknown>)[pino.symbols.streamSym] as
      | WritableLike
      | undefined;
    if (!stream || typeof stream.write !== 'function') return;
    this.stream = stream;
    const original = stream.write;
    this.original = original;
    const tap = this;
    this.tapped = function (this: unknown, chunk: unknown, ...rest: unknown[]): boolean {
      if (tap.active && typeof chunk === 'string') tap.line(chunk);
      return original.call(this, chunk, ...rest);
    };
    stream.write = this.tapped;
  }

  /** Whether the logger's destination could be tapped (a pino logger). */
  get attached(): boolean {
    return this.stream !== undefined;
  }

  close(): void {
    this.active = false;
    // another tap may have wrapped ours since: then ours stays in the chain, inactive
    if (this.stream && this.stream.write === this.tapped && this.original) this.stream.write = this.original;
  }

  private line(chunk: string): void {
    if (!chunk.includes('"event":')) return;
    let parsed: Record<string, unknown>;
    try {
      parsed = JSON.parse(chunk) as Record<string, unknown>;
    } catch {
      return;
    }
    if (typeof parsed.event !== 'string' || !EVENT_NAME.test(parsed.event)) return;
    if (parsed.node !== undefined && parsed.node !== this.node) return;
    const fields: Record<string, unknown> = {};
    let n = 0;
    for (const [k, v] of Object.entries(parsed)) {
      if (OWN_KEYS.has(k) || k === '__proto__') continue;
      if (++n > 16) break;
      fields[k] = v;
    }
    const at = typeof parsed.time === 'number' ? parsed.time : Date.now();
    this.onEvent({
      at,
      event: parsed.event,
      ...(typeof parsed.msg === 'string' ? { msg: parsed.msg.slice(0, CONSOLE_CAPS.text) } : {}),
      fields: (toPlain(fields, FIELD_LIMITS) ?? {}) as Record<string, unknown>,
    });
  }
}
