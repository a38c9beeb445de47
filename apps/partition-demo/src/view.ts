/**
 * The screen, as a pure function of a view model: header (coordinator, singletons, partition
 * table, fault), one row per node, the recent events, and the status/keys lines. The same text
 * goes to a terminal (with colours, cut to its size) and to plain output (CI logs).
 */
import type { CartTotals } from './cart-book.js';
import type { DemoEvent } from './events.js';
import type { Balance } from './observe.js';

export interface ViewRow {
  /** 1-based, the number key that selects it. */
  readonly number: number;
  readonly name: string;
  readonly port: number;
  /** `starting`, `running`, `paused`, `leaving`, `left`, `killed`, `exit 3`, … */
  readonly process: string;
  /** Status in the majority view; undefined when it does not list the node. */
  readonly status: string | undefined;
  readonly reachable: boolean | undefined;
  readonly age: number | undefined;
  /** How many incarnations (uids) the demo has seen for it. */
  readonly incarnation: number | undefined;
  readonly partitions: number | undefined;
  /** Sharded entities running on it (`GET /cluster/shards`), when it answers that. */
  readonly entities?: number | undefined;
  readonly coordinator: boolean;
  readonly allocator: boolean;
  /** What the node itself sees: `5 up, athens`; `(no answer)` when it does not answer. */
  readonly sees: string | undefined;
  readonly selected: boolean;
}

export interface ViewModel {
  readonly cluster: string;
  readonly now: number;
  readonly uptimeMs: number;
  readonly running: number;
  readonly total: number;
  readonly coordinator:
    | {
        readonly name: string;
        readonly address: string;
        readonly votes: number;
        readonly of: number;
        readonly majority: boolean;
      }
    | undefined;
  /** Other coordinators some nodes see (each side of a partition has its own). */
  readonly otherCoordinators: readonly { readonly name: string; readonly votes: number }[];
  readonly singletons: readonly { readonly name: string; readonly on: readonly string[] }[];
  readonly table: Balance | undefined;
  /** Endpoints that answer 404. */
  readonly missing: readonly string[];
  readonly fault: readonly [readonly string[], readonly string[]] | undefined;
  readonly rows: readonly ViewRow[];
  readonly events: readonly DemoEvent[];
  readonly script: { readonly file: string; readonly line: number; readonly text: string } | undefined;
  readonly lastAction: string | undefined;
  /** Show the keys line (interactive mode). */
  readonly keys: string | undefined;
  readonly logDir: string | undefined;
  /** The cart load, when the demo drives one. */
  readonly carts?: CartsLine | undefined;
}

/** The cart load's line: its totals, and the last check's outcome. */
export interface CartsLine {
  readonly carts: number;
  readonly rate: number;
  readonly running: boolean;
  readonly totals: CartTotals;
  readonly lastCheck: string | undefined;
}

export interface RenderOptions {
  /** Terminal columns; lines are cut to fit. */
  readonly width?: number;
  /** Terminal rows; the event list shrinks to fit. */
  readonly height?: number;
  readonly color?: boolean;
  /** How many events at most (default 12). */
  readonly maxEvents?: number;
}

type Paint = 'bold' | 'dim' | 'green' | 'red' | 'yellow' | 'cyan' | 'inverse';
const CODES: Record<Paint, string> = {
  bold: '1',
  dim: '2',
  green: '32',
  red: '31',
  yellow: '33',
  cyan: '36',
  inverse: '7',
};

function painter(enabled: boolean) {
  return (text: string, ...paints: (Paint | undefined | false)[]) => {
    const codes = paints.filter((p): p is Paint => !!p).map((p) => CODES[p]);
    return enabled && codes.length && text ? `\u001b[${codes.join(';')}m${text}\u001b[0m` : text;
  };
}

export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, '0');
  return h ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
}

/** Local wall-clock time, `12:03:07.412` (without the milliseconds when `ms` is false). */
export function formatClock(time: number, ms = true): string {
  const d = new Date(time);
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  const hms = `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
  return ms ? `${hms}.${p(d.getMilliseconds(), 3)}` : hms;
}

/** Cuts plain text to `width` columns (an ellipsis marks the cut). */
function fit(text: string, width: number): string {
  return text.length <= width ? text : `${text.slice(0, Math.max(0, width - 1))}…`;
}

interface Column {
  readonly header: string;
  readonly width: number;
  /** Dropped first when the terminal is narrow (higher goes first); 0 never. */
  readonly drop: number;
  readonly cell: (r: ViewRow) => { text: string; paint?: (Paint | undefined | false)[] };
}

const statusPaint = (s: string | undefined): Paint | undefined =>
  s === 'up' ? 'green' : s === 'down' ? 'red' : s === undefined ? 'dim' : 'yellow';

const processPaint = (p: string): Paint | undefined =>
  p === 'running' ? undefined : p === 'paused' || p === 'starting' || p === 'leaving' ? 'yellow' : 'red';

const COLUMNS: readonly Column[] = [
  {
    header: ' #',
    width: 3,
    drop: 0,
    cell: (r) => ({ text: `${r.selected ? '>' : ' '}${r.number}`, paint: [r.selected && 'bold'] }),
  },
  { header: 'node', width: 11, drop: 0, cell: (r) => ({ text: r.name, paint: [r.selected && 'bold'] }) },
  { header: 'port', width: 6, drop: 3, cell: (r) => ({ text: String(r.port) }) },
  {
    header: 'process',
    width: 9,
    drop: 0,
    cell: (r) => ({ text: r.process, paint: [processPaint(r.process)] }),
  },
  {
    header: 'member',
    width: 8,
    drop: 0,
    cell: (r) => ({ text: r.status ?? '-', paint: [statusPaint(r.status)] }),
  },
  {
    header: 'reach',
    width: 6,
    drop: 0,
    cell: (r) =>
      r.reachable === undefined
        ? { text: '-', paint: ['dim'] }
        : r.reachable
          ? { text: 'yes' }
          : { text: 'NO', paint: ['red', 'bold'] },
  },
  { header: 'age', width: 4, drop: 0, cell: (r) => ({ text: r.age === undefined ? '-' : String(r.age) }) },
  {
    header: 'inc',
    width: 4,
    drop: 2,
    cell: (r) => ({ text: r.incarnation === undefined ? '-' : String(r.incarnation) }),
  },
  {
    header: 'parts',
    width: 6,
    drop: 0,
    cell: (r) => ({ text: r.partitions === undefined ? '-' : String(r.partitions) }),
  },
  {
    header: 'entities',
    width: 9,
    // the first to go in a narrow terminal
    drop: 1,
    cell: (r) => ({ text: r.entities === undefined ? '-' : String(r.entities) }),
  },
  {
    header: 'coord',
    width: 6,
    drop: 0,
    cell: (r) => (r.coordinator ? { text: 'yes', paint: ['cyan', 'bold'] } : { text: '' }),
  },
  {
    header: 'alloc',
    width: 6,
    drop: 0,
    cell: (r) => (r.allocator ? { text: 'yes', paint: ['cyan', 'bold'] } : { text: '' }),
  },
  {
    header: 'its own view',
    width: 16,
    drop: 1,
    cell: (r) => ({ text: r.sees ?? '', paint: [r.sees === '(no answer)' && 'dim'] }),
  },
];

function chooseColumns(width: number): Column[] {
  const columns = [...COLUMNS];
  const total = () => columns.reduce((n, c) => n + c.width, 0);
  while (total() > width) {
    const victim = columns.filter((c) => c.drop > 0).sort((a, b) => a.drop - b.drop)[0];
    if (!victim) break;
    columns.splice(columns.indexOf(victim), 1);
  }
  return columns;
}

function reportersText(e: DemoEvent): string {
  if (e.event === 'demo') return 'demo';
  return e.reporters.length === 1 ? e.reporters[0]! : `${e.reporters.length} nodes`;
}

/** Renders the screen; lines are separated by `\n`, without a trailing newline. */
export function renderView(model: ViewModel, options: RenderOptions = {}): string {
  const width = Math.max(40, options.width ?? 120);
  const paint = painter(options.color === true);
  const lines: string[] = [];
  /** Adds a line made of [text, paints] parts, cut to the width before painting. */
  const add = (...parts: (string | [string, ...(Paint | undefined | false)[]])[]) => {
    let room = width;
    let out = '';
    for (const part of parts) {
      const [text, ...paints] = typeof part === 'string' ? [part] : part;
      if (room <= 0) break;
      const cut = fit(text, room);
      room -= cut.length;
      out += paint(cut, ...paints);
    }
    lines.push(out);
  };
  const label = (text: string): [string, Paint] => [text.padEnd(13), 'bold'];

  add(
    ['doyen partition demo', 'bold'],
    `   cluster ${model.cluster}   ${model.running} of ${model.total} nodes running   up ${formatDuration(model.uptimeMs)}`,
  );
  const c = model.coordinator;
  const others = model.otherCoordinators.length
    ? `; others see ${model.otherCoordinators.map((o) => `${o.name} (${o.votes})`).join(', ')}`
    : '';
  if (c) {
    add(
      label('coordinator'),
      [c.name, 'cyan', 'bold'],
      ` ${c.address}  (${c.votes} of ${c.of} nodes agree${c.majority ? '' : ', no majority'}${others})`,
    );
  } else {
    add(label('coordinator'), ['none agreed yet', 'yellow']);
  }
  if (model.missing.includes('/singletons')) {
    add(label('singletons'), ['GET /singletons answers 404 on these nodes', 'yellow']);
  } else if (model.singletons.length === 0) {
    add(label('singletons'), ['-', 'dim']);
  } else {
    add(
      label('singletons'),
      model.singletons
        .map((s) => `${s.name} on ${s.on.length ? s.on.join(' AND ') : 'nowhere (handing over?)'}`)
        .join('; '),
    );
  }
  const t = model.table;
  if (model.missing.includes('/partitions')) {
    add(label('partitions'), ['GET /partitions answers 404 on these nodes', 'yellow']);
  } else if (!t) {
    add(label('partitions'), ['no table yet', 'dim']);
  } else {
    const spread = t.members ? `${t.min}..${t.max} per node` : 'no members';
    const unassigned = t.unassigned ? `, ${t.unassigned} unassigned` : '';
    const strays = t.strays.length ? `, owners not up: ${t.strays.join(', ')}` : '';
    add(
      label('partitions'),
      `table v${t.version}: ${t.partitionCount} over ${t.members} up members, ${spread}${unassigned}${strays}  `,
      t.balanced ? ['balanced', 'green'] : ['unbalanced', 'yellow', 'bold'],
    );
  }
  const k = model.carts;
  if (k) {
    const t = k.totals;
    const lost = t.restartedEmpty
      ? `, ${t.restartedEmpty} restarted empty after crashes (${t.lostAcked} acked adds lost)`
      : '';
    add(
      label('carts'),
      `${k.carts} carts, ${k.running ? `${k.rate} adds/s` : 'load stopped'}: ${t.acked} adds acked, ${t.inFlight} in flight, ${t.unanswered} unanswered${lost}`,
      ...(k.lastCheck ? ([[`  check: ${k.lastCheck}`, 'dim']] as [string, Paint][]) : []),
    );
  }
  if (model.fault) {
    add(
      label('fault'),
      [`${model.fault[0].join(',')}  |  ${model.fault[1].join(',')}`, 'red', 'bold'],
      '  (blackholed)',
    );
  } else {
    add(label('fault'), ['none', 'dim']);
  }
  lines.push('');

  const columns = chooseColumns(width);
  add([columns.map((col) => col.header.padEnd(col.width)).join(''), 'bold']);
  for (const r of model.rows) {
    add(
      ...columns.map((col): [string, ...(Paint | undefined | false)[]] => {
        const cell = col.cell(r);
        const text = fit(cell.text, col.width - 1).padEnd(col.width);
        return [text, ...(cell.paint ?? [])];
      }),
    );
  }
  lines.push('');

  const footerLines = () => {
    const f: (() => void)[] = [];
    if (model.script)
      f.push(() =>
        add(label('script'), `${model.script!.file}:${model.script!.line}  ${model.script!.text}`),
      );
    if (model.lastAction) f.push(() => add(label('last action'), model.lastAction!));
    if (model.keys) f.push(() => add([model.keys!, 'bold']));
    if (model.logDir) f.push(() => add(['logs', 'dim'], [`  ${model.logDir}`, 'dim']));
    return f;
  };
  const tail = footerLines();
  const room =
    options.height === undefined
      ? (options.maxEvents ?? 12)
      : Math.min(options.maxEvents ?? 12, options.height - lines.length - 1 - tail.length - 1);
  const events = model.events.slice(-Math.max(0, room));
  if (room > 0) {
    add(['recent events', 'bold']);
    if (events.length === 0) add(['  (none yet)', 'dim']);
    for (const e of events) {
      const paints: Paint[] =
        e.level === 'error'
          ? ['red']
          : e.event === 'demo'
            ? ['yellow']
            : e.event.includes('down')
              ? ['red']
              : [];
      add(
        ` ${formatClock(e.time, width >= 100)}  `,
        reportersText(e).padEnd(11),
        [e.event.padEnd(21), ...paints],
        e.text,
      );
    }
    lines.push('');
  }
  for (const f of tail) f();
  while (lines.length && lines[lines.length - 1] === '') lines.pop();
  return lines.join('\n');
}
