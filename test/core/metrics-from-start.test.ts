import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { fromTransition } from 'xstate';
import {
  DEAD_LETTER_REASONS,
  DOYEN_METRICS,
  MAILBOX_DEPTH_MAX_SERIES,
  Metrics,
  mailboxDepthSeries,
  OTHER_ACTORS_PATH,
  topLevelPathOf,
} from '../../packages/core/src/index.js';
import { makeCoreSystem } from '../support/core-system.js';
import { nodesClosedAfterEach, startLocalNode } from '../support/doyen-nodes.js';

/**
 * Metrics a dashboard can rely on from the start: doyen's own series exist at 0 before anything
 * happened, the process metrics count from the process's start (not the first scrape), and the
 * mailbox depth gauge has a bounded number of series however many actors run.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** prom-client as @doyen/core has it (the positive control registers its defaults the old way). */
const promClient = createRequire(join(ROOT, 'packages/core/package.json'))('prom-client') as {
  Registry: new () => { metrics(): Promise<string> };
  collectDefaultMetrics(options: { register: unknown }): void;
};

/** Collected at scrape time by the actor system, not declared (its series are the actors'). */
const COLLECTED = new Set(['doyen_mailbox_depth']);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** Every `'doyen_…'` string in the packages' sources: the names doyen records metrics under. */
function metricNamesInSources(): Map<string, string> {
  const found = new Map<string, string>();
  for (const pkg of readdirSync(join(ROOT, 'packages'))) {
    let files: string[];
    try {
      files = sourceFiles(join(ROOT, 'packages', pkg, 'src'));
    } catch {
      continue;
    }
    // the catalogue itself is what is checked, not evidence
    for (const file of files.filter((f) => !f.endsWith('metric-catalogue.ts'))) {
      for (const m of readFileSync(file, 'utf8').matchAll(/['"`](doyen_[a-z0-9_]+)['"`]/g))
        found.set(m[1]!, file.slice(ROOT.length));
    }
  }
  return found;
}

/** `name{labels} value` lines and `# TYPE name kind` lines of a text exposition. */
function parse(text: string) {
  const types = new Map<string, string>();
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) types.set(type[1]!, type[2]!);
    else if (line && !line.startsWith('#')) {
      const at = line.lastIndexOf(' ');
      samples.set(line.slice(0, at), Number(line.slice(at + 1)));
    }
  }
  return { types, samples };
}

describe("doyen's metrics exist from the start", () => {
  it('every metric name in the sources is declared in DOYEN_METRICS (or collected)', () => {
    const names = metricNamesInSources();
    // positive control: the scan finds names where they are recorded
    expect(names.get('doyen_dead_letters_total')).toMatch(/dead-letters\.ts$/);
    expect(names.get('doyen_wire_frames_sent_total')).toMatch(/association\.ts$/);
    const declared = new Set(DOYEN_METRICS.map((d) => d.name));
    const missing = [...names].filter(([n]) => !declared.has(n) && !COLLECTED.has(n));
    expect(missing, 'add these to packages/core/src/metric-catalogue.ts').toEqual([]);
    expect(declared.size).toBe(DOYEN_METRICS.length);
  });

  it('a fresh Metrics renders each declared metric, known label sets at 0', async () => {
    const { types, samples } = parse(await new Metrics().render());
    for (const d of DOYEN_METRICS) expect(types.get(d.name), d.name).toBe(d.kind);
    for (const reason of DEAD_LETTER_REASONS)
      expect(samples.get(`doyen_dead_letters_total{reason="${reason}"}`), reason).toBe(0);
    expect(samples.get('doyen_ask_refused_total')).toBe(0);
    expect(samples.get('doyen_wire_frames_sent_total{lane="system"}')).toBe(0);
    expect(samples.get('doyen_ask_duration_seconds_count{outcome="timeout"}')).toBe(0);
    expect(samples.get('doyen_heartbeat_interarrival_seconds_count')).toBe(0);
    expect(samples.get('doyen_cluster_members')).toBe(0);
    // an open-ended label (a peer's reject reason) is declared, not invented: no unlabelled sample
    expect(samples.has('doyen_wire_rejected_total')).toBe(false);
  });

  it('declared series keep counting as before, and a declared label name stays when values add others', async () => {
    const m = new Metrics();
    m.inc('doyen_dead_letters_total', 'Messages that could not be delivered', { reason: 'node-gone' }, 3);
    m.inc('doyen_wire_handshake_failures_total', 'Outbound handshakes that failed', { lane: 'user' });
    const { samples } = parse(await m.render());
    expect(samples.get('doyen_dead_letters_total{reason="node-gone"}')).toBe(3);
    expect(samples.get('doyen_dead_letters_total{reason="no-such-actor"}')).toBe(0);
    expect(samples.get('doyen_wire_handshake_failures_total{lane="user"}')).toBe(1);
    expect(m.value('doyen_dead_letters_total', { reason: 'node-gone' })).toBe(3);
    expect(m.total('doyen_dead_letters_total')).toBe(3);
  });
});

describe('process metrics', () => {
  it('process_cpu_seconds_total is the process total, not the CPU since the first scrape', async () => {
    const m = new Metrics();
    const before = process.cpuUsage();
    const seconds = parse(await m.render()).samples.get('process_cpu_seconds_total')!;
    const after = process.cpuUsage();
    expect(seconds).toBeGreaterThanOrEqual((before.user + before.system) / 1e6 - 0.01);
    expect(seconds).toBeLessThanOrEqual((after.user + after.system) / 1e6 + 0.01);
    // positive control: prom-client registered at a scrape counts only from then on
    const lazy = new promClient.Registry();
    promClient.collectDefaultMetrics({ register: lazy });
    const spin = Date.now() + 30;
    while (Date.now() < spin);
    const lazySeconds = parse(await lazy.metrics()).samples.get('process_cpu_seconds_total')!;
    expect(lazySeconds).toBeLessThan(((after.user + after.system) / 1e6) * 0.5);
  });
});

describe('doyen_mailbox_depth has bounded cardinality', () => {
  it('one series per top-level actor, summing the actors below it', () => {
    expect(topLevelPathOf('/user/orders/o-17/line-2')).toBe('/user/orders');
    expect(topLevelPathOf('/system/membership')).toBe('/system/membership');
    expect(topLevelPathOf('/user')).toBe('/user');
    const entities = Array.from({ length: 1000 }, (_, i) => [`/user/orders/o-${i}`, i % 2] as const);
    expect(mailboxDepthSeries([...entities, ['/user/orders', 5], ['/system/membership', 0]])).toEqual([
      { labels: { path: '/user/orders' }, value: 505 },
      { labels: { path: '/system/membership' }, value: 0 },
    ]);
  });

  it('past the cap the deepest keep their series and the rest are summed as other', () => {
    const actors = Array.from({ length: 500 }, (_, i) => [`/user/entity-${i}`, i] as const);
    const series = mailboxDepthSeries(actors);
    expect(series).toHaveLength(MAILBOX_DEPTH_MAX_SERIES);
    expect(series[0]).toEqual({ labels: { path: '/user/entity-499' }, value: 499 });
    const other = series.find((s) => s.labels.path === OTHER_ACTORS_PATH)!;
    expect(other.value + series.reduce((sum, s) => sum + (s === other ? 0 : s.value), 0)).toBe(
      (499 * 500) / 2,
    );
    // positive control: without the cap, one series per actor
    expect(mailboxDepthSeries(actors, Number.POSITIVE_INFINITY)).toHaveLength(500);
  });

  it('an actor system with 300 top-level actors renders at most the cap', async () => {
    const { system } = makeCoreSystem();
    try {
      for (let i = 0; i < 300; i++)
        system.spawn(
          fromTransition((n: number) => n + 1, 0),
          { name: `e-${i}` },
        );
      const lines = (await system.metrics.render())
        .split('\n')
        .filter((l) => l.startsWith('doyen_mailbox_depth{'));
      expect(lines.length).toBe(MAILBOX_DEPTH_MAX_SERIES);
      expect(lines.some((l) => l.includes(`path="${OTHER_ACTORS_PATH}"`))).toBe(true);
    } finally {
      system.terminate();
    }
  });
});

describe('GET /metrics of a fresh node', () => {
  const nodes = nodesClosedAfterEach();

  it('already lists every declared metric and the process metrics', async () => {
    const { httpPort } = await startLocalNode(
      { cluster: 'fresh-metrics', partitions: { count: 0 } },
      {},
      nodes,
    );
    const { types, samples } = parse(await (await fetch(`http://127.0.0.1:${httpPort}/metrics`)).text());
    for (const d of DOYEN_METRICS) expect(types.get(d.name), d.name).toBe(d.kind);
    expect(samples.get('doyen_dead_letters_total{reason="mailbox-full"}')).toBe(0);
    expect(samples.get('doyen_cluster_members')).toBe(1);
    expect(samples.get('process_cpu_seconds_total')).toBeGreaterThan(0);
    expect(types.get('nodejs_eventloop_lag_seconds')).toBe('gauge');
    // system actors have their depth series from the start
    expect([...samples.keys()].some((k) => k.startsWith('doyen_mailbox_depth{path="/system/'))).toBe(true);
  });
});
