/**
 * The "recent events" list: the interesting lines of the nodes' JSON logs, plus what the demo
 * itself did. Every node logs the same membership change (`member.up ephesus` five times), so
 * one fact seen by several nodes within a few seconds becomes one entry with its reporters.
 */
import { addressOfKey } from '../../../packages/core/src/address.js';

export interface DemoEvent {
  readonly time: number;
  /** `member.up`, `sbr.decision`, … or `demo` for the demo's own actions. */
  readonly event: string;
  /** A short human text: `ephesus (age 5)`. */
  readonly text: string;
  /** Names of the nodes that logged it (empty for the demo's own). */
  readonly reporters: string[];
  readonly level: 'info' | 'warn' | 'error';
  /** Collapsing key: the same fact from another node within `windowMs` joins this entry. */
  readonly key: string;
}

/** The events worth showing (cluster membership, the resolver, singletons, partitions, faults). */
export const INTERESTING = new Set([
  'member.up',
  'member.leaving',
  'member.unreachable',
  'member.reachable',
  'member.downed',
  'member.removed',
  'coordinator.changed',
  'election.leader',
  'sbr.decision',
  'split-brain.merge',
  'singleton.started',
  'singleton.stopped',
  'partitions.allocated',
  'node.restart',
  'node.restart-failed',
  'node.downed-exit',
  'node.join-failed',
  'node.stopped',
]);

type Json = Record<string, unknown>;

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** Describes one log line (`undefined` when it is not interesting). */
export function describe(
  json: Json,
  nameOf: (address: string) => string,
): { event: string; text: string; key: string } | undefined {
  const event = str(json.event);
  const level = typeof json.level === 'number' ? json.level : 30;
  if (!event) return undefined;
  if (!INTERESTING.has(event) && level < 50) return undefined;
  const member = (json.member ?? undefined) as Json | undefined;
  const who = member ? (str(member.name) ?? nameOf(str(member.address) ?? '?')) : undefined;
  const uid = member ? str(member.uid) : undefined;
  switch (event) {
    case 'coordinator.changed': {
      const previous = str(json.previous);
      const text = `${previous ? nameOf(previous) : '(none)'} -> ${who ?? '(none)'}`;
      return { event, text, key: `${event}|${previous}|${member ? str(member.address) : ''}` };
    }
    case 'election.leader': {
      // with an elected coordinator: only a node that starts leading and may act is news
      if (json.role !== 'leading' || json.acting !== true) return undefined;
      const node = str(json.node);
      const text = `${node ? nameOf(node) : '?'} leads (${str(json.algorithm) ?? '?'}, term ${json.term})`;
      return { event, text, key: `${event}|${node}|${json.term}` };
    }
    case 'member.up':
    case 'member.leaving':
    case 'member.unreachable':
    case 'member.reachable':
    case 'member.downed':
    case 'member.removed': {
      const age = member && typeof member.age === 'number' ? ` (age ${member.age})` : '';
      const self = json.self === true ? ' (itself)' : '';
      return { event, text: `${who ?? '?'}${age}${self}`, key: `${event}|${who}|${uid}` };
    }
    case 'sbr.decision': {
      const down = Array.isArray(json.down) ? (json.down as string[]).map((k) => nameOf(k)) : [];
      const decision = str(json.decision) ?? '?';
      const text = `${decision}${down.length ? `: down ${down.join(', ')}` : ''}${json.reason ? ` (${json.reason})` : ''}`;
      return { event, text, key: `${event}|${decision}|${down.join(',')}` };
    }
    case 'split-brain.merge': {
      const target = str(json.target);
      return {
        event,
        text: `merging into ${target ? nameOf(target) : '?'}'s side`,
        key: `${event}|${target}`,
      };
    }
    case 'singleton.started':
    case 'singleton.stopped': {
      const name = str(json.singleton) ?? 'singleton';
      const reason = str(json.reason);
      return { event, text: `${name}${reason ? ` (${reason})` : ''}`, key: `${event}|${name}|${json.node}` };
    }
    case 'partitions.allocated':
      return {
        event,
        text: `v${json.version}: ${json.members} members, ${json.moved} moved`,
        key: `${event}|${json.version}`,
      };
    case 'node.restart':
      return { event, text: `new incarnation (${str(json.reason) ?? '?'})`, key: `${event}|${json.node}` };
    case 'node.stopped':
      return { event, text: `stopped (${str(json.reason) ?? '?'})`, key: `${event}` };
    default: {
      const msg = str(json.msg) ?? '';
      return { event, text: msg.slice(0, 80), key: `${event}|${msg}` };
    }
  }
}

/** Membership transitions a member incarnation goes through at most once. */
const ONCE = new Set(['member.up', 'member.leaving', 'member.downed', 'member.removed']);

export class EventLog {
  private readonly list: DemoEvent[] = [];
  private readonly once = new Map<string, DemoEvent>();

  constructor(
    private readonly options: {
      readonly limit?: number;
      readonly windowMs?: number;
      /** Called for every new entry (not for a reporter joining an existing one). */
      readonly onEvent?: (event: DemoEvent) => void;
    } = {},
  ) {}

  /** A node's log line; returns the new entry, if it made one. */
  addLogLine(
    reporter: string,
    json: Json,
    at: number,
    nameOf: (address: string) => string,
  ): DemoEvent | undefined {
    const d = describe(json, (a) => nameOf(addressOfKey(a)));
    if (!d) return undefined;
    const member = json.member as Json | undefined;
    // a node that joins learns the coordinator (and every member being up): not news
    if (d.event === 'coordinator.changed' && !json.previous && member && member.name !== reporter) {
      return undefined;
    }
    const level = typeof json.level === 'number' && json.level >= 50 ? 'error' : 'info';
    const time = typeof json.time === 'number' ? json.time : at;
    const windowMs = this.options.windowMs ?? 5000;
    // node-local facts (a singleton on this node, its restart) are keyed by reporter too
    const local = d.event.startsWith('singleton.') || d.event.startsWith('node.') || level === 'error';
    const key = local ? `${d.key}|${reporter}` : d.key;
    // these happen once per incarnation (uid): the same fact however late another node logs it
    const once = ONCE.has(d.event);
    const earlier = once
      ? this.once.get(key)
      : this.list
          .slice(-50)
          .reverse()
          .find((e) => e.key === key && Math.abs(time - e.time) <= windowMs);
    if (earlier) {
      if (!earlier.reporters.includes(reporter)) earlier.reporters.push(reporter);
      return undefined;
    }
    const entry = this.push({ time, event: d.event, text: d.text, reporters: [reporter], level, key });
    if (once) this.once.set(key, entry);
    return entry;
  }

  /** A line a node printed that is not JSON (stderr: a crash, a usage error). */
  addText(reporter: string, text: string, at: number): DemoEvent | undefined {
    if (/^\s/.test(text) || text.trim() === '') return undefined;
    return this.push({
      time: at,
      event: 'stderr',
      text: text.slice(0, 120),
      reporters: [reporter],
      level: 'error',
      key: `stderr|${reporter}|${at}`,
    });
  }

  /** Something the demo did (kill, pause, partition, a script expectation). */
  addDemo(text: string, at = Date.now(), level: DemoEvent['level'] = 'info'): DemoEvent {
    return this.push({ time: at, event: 'demo', text, reporters: [], level, key: `demo|${at}|${text}` });
  }

  recent(n: number): DemoEvent[] {
    return n <= 0 ? [] : this.list.slice(-n);
  }

  private push(e: DemoEvent): DemoEvent {
    this.list.push(e);
    const limit = this.options.limit ?? 500;
    if (this.list.length > limit) this.list.splice(0, this.list.length - limit);
    this.options.onEvent?.(e);
    return e;
  }
}
