/**
 * Demo scripts: one command a line, `#` starts a comment.
 *
 *   wait 3s                          sleep (ms, s or m; a bare number is seconds)
 *   wait-until converged 5 [20s]     wait until a condition holds (default 30 s), else fail
 *   expect coordinator byzantium [5s]   a check that may take a moment to hold (default 10 s);
 *                                    timeouts need a unit (ms, s, m)
 *   kill athens                      kill -9
 *   restart athens                   start it again (kill -9 first when running)
 *   pause byzantium [2s]             SIGSTOP, and SIGCONT after the duration when given
 *   resume byzantium                 SIGCONT
 *   add                              start the next node
 *   remove cyrene                    graceful leave (SIGTERM)
 *   partition athens,byzantium | cyrene,delphi,ephesus    blackhole traffic between the sides
 *   split                            partition the running nodes into two halves
 *   heal                             undo every partition
 *   echo some text                   print a line
 *   carts start [N [RATE]]           drive N carts (default 200) at RATE adds/s (default 100)
 *   carts stop                       stop the load; wait for every answer
 *   carts check [no-loss]            stop the load, ask every cart, compare with what was
 *                                    acknowledged (cart-book.ts); no-loss: and none restarted
 *                                    empty since the last check (planned moves only)
 *
 * Conditions: `converged N`, `members N`, `coordinator NAME`, `singleton-on NAME`,
 * `partitions-balanced`, `status NAME up|joining|leaving|exiting|down|absent`.
 */
import { type CheckResult, type Condition, describeCondition, STATUSES } from './conditions.js';

export type Step =
  | { readonly op: 'wait'; readonly ms: number }
  | { readonly op: 'wait-until' | 'expect'; readonly condition: Condition; readonly timeoutMs: number }
  | { readonly op: 'kill' | 'restart' | 'remove' | 'resume'; readonly node: string }
  | { readonly op: 'pause'; readonly node: string; readonly ms: number | undefined }
  | { readonly op: 'add' | 'split' | 'heal' }
  | { readonly op: 'partition'; readonly sides: readonly [readonly string[], readonly string[]] }
  | { readonly op: 'echo'; readonly text: string }
  | CartsStep;

/** `carts start [N [RATE]]`, `carts stop`, `carts check [no-loss]`. */
export type CartsStep =
  | { readonly op: 'carts'; readonly action: 'start'; readonly count?: number; readonly rate?: number }
  | { readonly op: 'carts'; readonly action: 'stop' }
  | { readonly op: 'carts'; readonly action: 'check'; readonly noLoss: boolean };

export interface ScriptLine {
  /** 1-based line number in the file. */
  readonly line: number;
  readonly text: string;
  readonly step: Step;
}

export const DEFAULT_WAIT_UNTIL_MS = 30_000;
export const DEFAULT_EXPECT_MS = 10_000;

export class ScriptError extends Error {
  constructor(
    readonly errors: readonly { readonly line: number; readonly message: string }[],
    readonly file: string,
  ) {
    super(errors.map((e) => `${file}:${e.line}: ${e.message}`).join('\n'));
    this.name = 'ScriptError';
  }
}

/** `500ms`, `3s`, `1.5s`, `2m`, or a bare number of seconds; undefined when it is not one. */
export function parseDuration(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(text);
  if (!m) return undefined;
  const n = Number(m[1]);
  const unit = m[2] ?? 's';
  return Math.round(unit === 'ms' ? n : unit === 's' ? n * 1000 : n * 60_000);
}

const NAME = /^[a-z][a-z0-9-]*$/;
const USAGE: Record<string, string> = {
  wait: 'wait DURATION (e.g. wait 3s)',
  'wait-until': 'wait-until CONDITION [TIMEOUT]',
  expect: 'expect CONDITION [TIMEOUT]',
  kill: 'kill NODE',
  restart: 'restart NODE',
  remove: 'remove NODE',
  resume: 'resume NODE',
  pause: 'pause NODE [DURATION]',
  add: 'add',
  split: 'split',
  heal: 'heal',
  partition: 'partition A,B | C,D',
  echo: 'echo TEXT',
  carts: 'carts start [N [RATE]] | carts stop | carts check [no-loss]',
};
const CONDITIONS =
  'converged N, members N, coordinator NODE, singleton-on NODE, partitions-balanced, status NODE STATUS';

function parseCondition(words: string[]): Condition | string {
  const [kind, ...args] = words;
  const count = (w: string | undefined) => (w && /^\d+$/.test(w) ? Number(w) : undefined);
  switch (kind) {
    case 'converged':
    case 'members': {
      const n = count(args[0]);
      if (n === undefined || args.length !== 1) return `${kind} needs a number of nodes (${kind} 5)`;
      return { kind, count: n };
    }
    case 'coordinator':
    case 'singleton-on':
      if (args.length !== 1 || !NAME.test(args[0]!)) return `${kind} needs a node name (${kind} athens)`;
      return { kind, node: args[0]! };
    case 'partitions-balanced':
      if (args.length) return `partitions-balanced takes no arguments`;
      return { kind };
    case 'status': {
      const [node, status] = args;
      if (args.length !== 2 || !NAME.test(node!) || !(STATUSES as readonly string[]).includes(status!))
        return `status needs a node and one of ${STATUSES.join('|')} (status athens up)`;
      return { kind, node: node!, status: status! };
    }
    default:
      return `unknown condition ${JSON.stringify(kind ?? '')}; conditions: ${CONDITIONS}`;
  }
}

function parseNames(text: string): string[] | string {
  const names = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (names.length === 0) return 'a side of a partition needs at least one node';
  const bad = names.find((n) => !NAME.test(n));
  return bad ? `bad node name ${JSON.stringify(bad)}` : names;
}

/** Parses one line (already without its comment); a string is the error. */
export function parseStep(text: string): Step | string {
  const [op, ...words] = text.trim().split(/\s+/);
  const node = () => (words.length === 1 && NAME.test(words[0]!) ? words[0]! : undefined);
  switch (op) {
    case 'wait': {
      const ms = words.length === 1 ? parseDuration(words[0]!) : undefined;
      return ms === undefined ? `usage: ${USAGE.wait}` : { op, ms };
    }
    case 'wait-until':
    case 'expect': {
      const last = words[words.length - 1];
      // the timeout needs a unit: `members 4` is a count, `members 4 10s` has a timeout
      const timeout = words.length > 1 && last && /[a-z]$/.test(last) ? parseDuration(last) : undefined;
      const condition = parseCondition(timeout === undefined ? words : words.slice(0, -1));
      if (typeof condition === 'string') return `${condition}; usage: ${USAGE[op]}`;
      return {
        op,
        condition,
        timeoutMs: timeout ?? (op === 'expect' ? DEFAULT_EXPECT_MS : DEFAULT_WAIT_UNTIL_MS),
      };
    }
    case 'kill':
    case 'restart':
    case 'remove':
    case 'resume': {
      const n = node();
      return n ? { op, node: n } : `usage: ${USAGE[op]}`;
    }
    case 'pause': {
      const ms = words.length === 2 ? parseDuration(words[1]!) : undefined;
      if (!NAME.test(words[0] ?? '') || words.length > 2 || (words.length === 2 && ms === undefined))
        return `usage: ${USAGE.pause}`;
      return { op, node: words[0]!, ms };
    }
    case 'add':
    case 'split':
    case 'heal':
      return words.length ? `${op} takes no arguments` : { op };
    case 'partition': {
      const sides = words.join(' ').split('|');
      if (sides.length !== 2) return `usage: ${USAGE.partition}`;
      const a = parseNames(sides[0]!);
      const b = parseNames(sides[1]!);
      if (typeof a === 'string') return a;
      if (typeof b === 'string') return b;
      const both = a.find((n) => b.includes(n));
      if (both) return `${both} is on both sides`;
      return { op, sides: [a, b] };
    }
    case 'echo':
      return { op, text: words.join(' ') };
    case 'carts':
      return parseCarts(words);
    default:
      return `unknown command ${JSON.stringify(op)}; commands: ${Object.keys(USAGE).join(', ')}`;
  }
}

function parseCarts(words: readonly string[]): CartsStep | string {
  const [action, ...rest] = words;
  const int = (w: string | undefined) =>
    w !== undefined && /^[1-9]\d{0,5}$/.test(w) ? Number(w) : undefined;
  if (action === 'start' && rest.length <= 2) {
    const [count, rate] = rest.map(int);
    if (rest.some((w) => int(w) === undefined)) return `usage: ${USAGE.carts}`;
    return {
      op: 'carts',
      action,
      ...(count !== undefined ? { count } : {}),
      ...(rate !== undefined ? { rate } : {}),
    };
  }
  if (action === 'stop' && rest.length === 0) return { op: 'carts', action };
  if (action === 'check' && (rest.length === 0 || (rest.length === 1 && rest[0] === 'no-loss')))
    return { op: 'carts', action, noLoss: rest.length === 1 };
  return `usage: ${USAGE.carts}`;
}

/** Parses a whole script; throws a ScriptError listing every bad line with its number. */
export function parseScript(source: string, file = 'script'): ScriptLine[] {
  const lines: ScriptLine[] = [];
  const errors: { line: number; message: string }[] = [];
  source.split(/\r?\n/).forEach((raw, i) => {
    const text = raw.replace(/#.*$/, '').trim();
    if (!text) return;
    const step = parseStep(text);
    if (typeof step === 'string') errors.push({ line: i + 1, message: `${text}: ${step}` });
    else lines.push({ line: i + 1, text, step });
  });
  if (errors.length) throw new ScriptError(errors, file);
  return lines;
}

/** What a script drives (the running demo, or a fake in tests). */
export interface ScriptTarget {
  kill(node: string): Promise<void>;
  restart(node: string): Promise<void>;
  remove(node: string): Promise<void>;
  pause(node: string, ms: number | undefined): Promise<void>;
  resume(node: string): Promise<void>;
  add(): Promise<string>;
  partition(a: readonly string[], b: readonly string[]): Promise<void>;
  split(): Promise<void>;
  heal(): Promise<void>;
  check(condition: Condition): CheckResult;
  /** The cart load (`carts …`): resolves with what to log, throws when a check fails. */
  carts?(step: CartsStep): Promise<string>;
}

export interface ScriptResult {
  readonly ok: boolean;
  readonly expects: number;
  readonly steps: number;
  /** `file:line: what failed` when not ok. */
  readonly failure: string | undefined;
}

export interface RunOptions {
  readonly file?: string;
  /** Progress lines (`line 7: kill athens`, `  ok: …`). */
  readonly log?: (text: string, level: 'step' | 'ok' | 'fail') => void;
  readonly onLine?: (line: ScriptLine | undefined) => void;
  readonly pollMs?: number;
  /** Stops the run between steps (quit pressed). */
  readonly aborted?: () => boolean;
}

const seconds = (ms: number) => (ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `condition` until it holds or `timeoutMs` passes. */
export async function waitFor(
  target: ScriptTarget,
  condition: Condition,
  timeoutMs: number,
  pollMs = 100,
  aborted: () => boolean = () => false,
): Promise<CheckResult & { readonly ms: number }> {
  const start = Date.now();
  for (;;) {
    const r = target.check(condition);
    if (r.ok || Date.now() - start >= timeoutMs || aborted()) return { ...r, ms: Date.now() - start };
    await sleep(pollMs);
  }
}

/** Runs the steps in order; stops at the first failed expectation, timeout or action error. */
export async function runScript(
  lines: readonly ScriptLine[],
  target: ScriptTarget,
  options: RunOptions = {},
): Promise<ScriptResult> {
  const file = options.file ?? 'script';
  const log = options.log ?? (() => {});
  let expects = 0;
  let steps = 0;
  const fail = (l: ScriptLine, message: string): ScriptResult => {
    const failure = `${file}:${l.line}: ${l.text}: ${message}`;
    log(`FAILED ${failure}`, 'fail');
    options.onLine?.(undefined);
    return { ok: false, expects, steps, failure };
  };
  for (const l of lines) {
    if (options.aborted?.())
      return { ok: false, expects, steps, failure: `${file}: stopped before line ${l.line}` };
    options.onLine?.(l);
    log(`line ${l.line}: ${l.text}`, 'step');
    steps++;
    const s = l.step;
    try {
      switch (s.op) {
        case 'wait':
          await sleep(s.ms);
          break;
        case 'wait-until':
        case 'expect': {
          if (s.op === 'expect') expects++;
          const r = await waitFor(target, s.condition, s.timeoutMs, options.pollMs, options.aborted);
          const what = describeCondition(s.condition);
          if (!r.ok) {
            return fail(
              l,
              `${s.op === 'expect' ? 'expected' : 'waited for'} ${what} for ${seconds(s.timeoutMs)}; now: ${r.detail}`,
            );
          }
          log(`  ok after ${seconds(r.ms)}: ${r.detail}`, 'ok');
          break;
        }
        case 'kill':
        case 'restart':
        case 'remove':
        case 'resume':
          await target[s.op](s.node);
          break;
        case 'pause':
          await target.pause(s.node, s.ms);
          break;
        case 'add':
          log(`  added ${await target.add()}`, 'ok');
          break;
        case 'split':
        case 'heal':
          await target[s.op]();
          break;
        case 'partition':
          await target.partition(s.sides[0], s.sides[1]);
          break;
        case 'echo':
          log(`  ${s.text}`, 'ok');
          break;
        case 'carts':
          if (!target.carts) throw new Error('this demo drives no carts');
          log(`  ${await target.carts(s)}`, 'ok');
          break;
      }
    } catch (error) {
      return fail(l, (error as Error).message);
    }
  }
  options.onLine?.(undefined);
  return { ok: true, expects, steps, failure: undefined };
}
