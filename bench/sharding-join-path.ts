// The path table → active of every join in rolling-restart runs, from the nodes' logs
// (`SHARDING_BENCH_LOG_DIR=dir pnpm bench sharding --only-rolling` keeps one `nX.pK.log` per
// process; K > 1 is a restart, so a join). Per join, in ms after the allocator computed the table
// that brought the newest process in: the newest adopts it, holds its owner lease; every old owner
// adopts it and hands its partitions off; the newest activates each old owner's partitions. With
// SHARDING_BENCH_LOG_LEVEL=debug also the newest's owner-lease bid and acquisition (host-lease.*).
// Usage: npx tsx bench/sharding-join-path.ts dir [dir…] [--joins] (--joins: one line per join).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface LogLine {
  readonly time: number;
  readonly event?: string;
  readonly version?: number;
  readonly status?: string;
  readonly partitions?: readonly number[];
  readonly scope?: string;
}

function readLog(path: string): LogLine[] {
  const lines: LogLine[] = [];
  for (const text of readFileSync(path, 'utf8').split('\n')) {
    if (!text.startsWith('{')) continue;
    try {
      lines.push(JSON.parse(text) as LogLine);
    } catch {
      // a line cut by the process's end
    }
  }
  return lines;
}

const firstAt = (log: readonly LogLine[], test: (l: LogLine) => boolean) => log.find(test)?.time;
const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const p90 = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(0.9 * (xs.length - 1))];

interface Join {
  readonly run: string;
  readonly process: string;
  readonly version: number;
  /** All in ms after the table was computed. */
  readonly figures: Record<string, number | undefined>;
  /** Per old owner: its hand-off, then the newest's first and last activation of those partitions. */
  readonly owners: string[];
}

function joinsOf(dir: string): Join[] {
  const logs = new Map<string, LogLine[]>();
  for (const f of readdirSync(dir))
    if (/^n\d+\.p\d+\.log$/.test(f)) logs.set(f.slice(0, -4), readLog(join(dir, f)));
  const computed = new Map<number, number>();
  for (const log of logs.values())
    for (const l of log)
      if (l.event === 'partitions.allocated' && l.version !== undefined && !computed.has(l.version))
        computed.set(l.version, l.time);
  const joins: Join[] = [];
  for (const [name, log] of [...logs].sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (name.endsWith('.p1')) continue; // a first start, not a join
    const table = log.find((l) => l.event === 'partitions.table');
    if (table?.version === undefined) continue;
    const v = table.version;
    const t0 = computed.get(v) ?? table.time;
    const rel = (t: number | undefined) => (t === undefined ? undefined : t - t0);
    const activated = new Map<number, number>();
    for (const l of log)
      if (l.event === 'sharding.partitions-activated' && l.version === v)
        for (const p of l.partitions ?? []) if (!activated.has(p)) activated.set(p, l.time);
    const handOffs: number[] = [];
    const adoptions: number[] = [];
    const owners: string[] = [];
    for (const [other, otherLog] of logs) {
      if (other === name) continue;
      const adopted = firstAt(otherLog, (l) => l.event === 'partitions.table' && l.version === v);
      if (adopted !== undefined) adoptions.push(adopted);
      for (const l of otherLog) {
        if (l.event !== 'sharding.partitions-handed-off' || l.version !== v) continue;
        handOffs.push(l.time);
        const at = (l.partitions ?? []).flatMap((p) => activated.get(p) ?? []).sort((a, b) => a - b);
        owners.push(
          `${other} ${rel(l.time)}→${at.length > 0 ? `${rel(at[0])}..${rel(at[at.length - 1])}` : '?'}`,
        );
      }
    }
    const acts = [...activated.values()];
    joins.push({
      run: dir,
      process: name,
      version: v,
      figures: {
        'newest up': rel(firstAt(log, (l) => l.event === 'node.status' && l.status === 'up')),
        'newest adopts': rel(table.time),
        'others adopt (last)': adoptions.length > 0 ? rel(Math.max(...adoptions)) : undefined,
        // with SHARDING_BENCH_LOG_LEVEL=debug: the owner lease's bid and the grant that made its majority
        'newest bid': rel(firstAt(log, (l) => l.event === 'host-lease.bid')),
        'newest acquired': rel(
          firstAt(log, (l) => l.event === 'host-lease.acquired' && l.scope?.startsWith('owner:') === true),
        ),
        'newest lease': rel(firstAt(log, (l) => l.event === 'sharding.lease-held')),
        'hand-off (first)': handOffs.length > 0 ? rel(Math.min(...handOffs)) : undefined,
        'hand-off (last)': handOffs.length > 0 ? rel(Math.max(...handOffs)) : undefined,
        'active (first)': acts.length > 0 ? rel(Math.min(...acts)) : undefined,
        'active (last)': acts.length > 0 ? rel(Math.max(...acts)) : undefined,
      },
      owners,
    });
  }
  return joins;
}

const args = process.argv.slice(2);
const joins = args.filter((a) => !a.startsWith('--')).flatMap(joinsOf);
if (args.includes('--joins'))
  for (const j of joins)
    console.log(
      `${j.run} ${j.process} v${j.version}: ${Object.entries(j.figures)
        .map(([k, v]) => `${k} ${v ?? '-'}`)
        .join(', ')} | old owner hand-off→activated: ${j.owners.join('; ')}`,
    );
console.log(`${joins.length} joins, ms after the table was computed: median / p90`);
for (const key of Object.keys(joins[0]?.figures ?? {})) {
  const xs = joins.flatMap((j) => j.figures[key] ?? []);
  if (xs.length > 0) console.log(`  ${key.padEnd(20)} ${median(xs)} / ${p90(xs)}`);
}
