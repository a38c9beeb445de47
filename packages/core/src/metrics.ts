import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import { BucketHistogram, type HistogramSeries } from './bucket-histogram.js';
import { labelKey } from './label-key.js';
import {
  DOYEN_METRICS,
  LATENCY_BUCKETS_SECONDS,
  type Labels,
  type MetricDefinition,
} from './metric-catalogue.js';

interface Series {
  readonly name: string;
  readonly help: string;
  readonly kind: 'counter' | 'gauge';
  readonly values: Map<string, { labels: Labels; value: number }>;
  /** Label names declared before any value has them (so the metric renders with them, empty). */
  readonly labelNames: Set<string>;
}

/** A counter series a hot path adds to in place (see `Metrics.counterSeries`). */
export interface CounterSeries {
  value: number;
}

/** A gauge read when the metrics are read (e.g. mailbox depths), so the hot path never writes it. */
interface Collected {
  readonly name: string;
  readonly help: string;
  readonly read: () => Iterable<{ labels: Labels; value: number }>;
}

let processRegistry: Registry | undefined;

/**
 * The process's default metrics, registered once, when the first node starts (not at its first
 * scrape). prom-client counts CPU from the moment it registers: the CPU used before is added,
 * so `process_cpu_seconds_total` is the process's own total, as Prometheus defines it.
 */
function processMetrics(): Registry {
  if (processRegistry) return processRegistry;
  const before = process.cpuUsage();
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const add = (name: string, micros: number) =>
    (registry.getSingleMetric(name) as Counter | undefined)?.inc(micros / 1e6);
  add('process_cpu_user_seconds_total', before.user);
  add('process_cpu_system_seconds_total', before.system);
  add('process_cpu_seconds_total', before.user + before.system);
  processRegistry = registry;
  return registry;
}

/**
 * A node's metrics, exposed in Prometheus' text format by prom-client: its registry renders and
 * escapes label values. Histograms are kept by doyen (bucket-histogram.ts: prom-client's observe
 * cost a sixth of a local ask) and rendered by the registry in prom-client's own text.
 * Counters and gauges are kept here first — an increment on a hot path (a frame, a dead letter)
 * is one map update — and handed to prom-client when the metrics are scraped. Every Metrics has
 * its own registry, so several nodes in one process never share a series. doyen's own metrics
 * (DOYEN_METRICS) exist from the start, at 0; the process and Node.js metrics belong to the
 * process, so one registry of them, made when the first Metrics is, is rendered by every one.
 */
export class Metrics {
  /** prom-client's registry of this node: scrape it with `render()` (or add it to your own). */
  readonly registry = new Registry();
  private readonly series = new Map<string, Series>();
  private readonly collected = new Map<string, Collected>();
  private readonly histograms = new Map<string, BucketHistogram>();
  /** The prom-client metric mirroring each series, and the label names it was made with. */
  private readonly mirrors = new Map<string, { metric: Counter | Gauge; labelNames: string }>();
  private readonly processRegistry = processMetrics();

  constructor() {
    for (const definition of DOYEN_METRICS) this.declare(definition);
  }

  private get(name: string, help: string, kind: Series['kind']): Series {
    let s = this.series.get(name);
    if (!s) {
      s = { name, help, kind, values: new Map(), labelNames: new Set() };
      this.series.set(name, s);
    }
    return s;
  }

  /**
   * Makes a metric exist before its first value: its known label sets at 0 (the unlabelled
   * series when it has no labels), its label names declared. Declaring again changes nothing.
   */
  declare(definition: MetricDefinition): void {
    const { name, help, kind, labelNames = [] } = definition;
    const zeros = definition.zeros ?? (labelNames.length === 0 ? [{}] : []);
    if (kind === 'histogram') {
      if (this.histograms.has(name)) return;
      const h = this.histogram(name, help, labelNames, definition.buckets ?? LATENCY_BUCKETS_SECONDS);
      for (const labels of zeros) h.series(labels);
      return;
    }
    const s = this.get(name, help, kind);
    for (const label of labelNames) s.labelNames.add(label);
    for (const labels of zeros) {
      const key = labelKey(labels);
      if (!s.values.has(key)) s.values.set(key, { labels, value: 0 });
    }
  }

  private histogram(name: string, help: string, labelNames: readonly string[], buckets: readonly number[]) {
    const h = new BucketHistogram(name, help, labelNames, buckets, this.registry);
    this.histograms.set(name, h);
    return h;
  }

  /**
   * One counter series itself, for a hot path that counts per frame: `series.value += n` is `inc`
   * without the label key built and looked up each time (~0.07 µs, three times a remote ask per
   * side, issue 29). Take it when first counting: the series exists from then on, as after an `inc`.
   */
  counterSeries(name: string, help: string, labels: Labels = {}): CounterSeries {
    const s = this.get(name, help, 'counter');
    const key = labelKey(labels);
    let entry = s.values.get(key);
    if (!entry) s.values.set(key, (entry = { labels, value: 0 }));
    return entry;
  }

  inc(name: string, help: string, labels: Labels = {}, by = 1): void {
    const s = this.get(name, help, 'counter');
    const key = labelKey(labels);
    const entry = s.values.get(key);
    if (entry) entry.value += by;
    else s.values.set(key, { labels, value: by });
  }

  set(name: string, help: string, value: number, labels: Labels = {}): void {
    this.get(name, help, 'gauge').values.set(labelKey(labels), { labels, value });
  }

  /** A gauge whose series `read` returns whenever the metrics are read or rendered. */
  collect(name: string, help: string, read: Collected['read']): void {
    this.collected.set(name, { name, help, read });
  }

  /**
   * Observes a value into the histogram `name` (created on first use with these label names
   * and `buckets`). Latencies go in seconds, as Prometheus names them (`…_seconds`).
   */
  observe(
    name: string,
    help: string,
    value: number,
    labels: Labels = {},
    buckets: readonly number[] = LATENCY_BUCKETS_SECONDS,
  ): void {
    const h = this.histograms.get(name) ?? this.histogram(name, help, Object.keys(labels), buckets);
    h.observe(labels, value);
  }

  /**
   * One label set of the histogram `name`, to observe into directly: for hot paths (an ask's
   * duration), which take it once rather than having the labels looked up per observation.
   */
  histogramSeries(
    name: string,
    help: string,
    labels: Labels,
    buckets: readonly number[] = LATENCY_BUCKETS_SECONDS,
  ): HistogramSeries {
    const h = this.histograms.get(name) ?? this.histogram(name, help, Object.keys(labels), buckets);
    return h.series(labels);
  }

  /** Current value of one series (0 when never touched). */
  value(name: string, labels: Labels = {}): number {
    const c = this.collected.get(name);
    if (c) {
      const key = labelKey(labels);
      for (const v of c.read()) if (labelKey(v.labels) === key) return v.value;
      return 0;
    }
    return this.series.get(name)?.values.get(labelKey(labels))?.value ?? 0;
  }

  /** Sum over all label sets of one series. */
  total(name: string): number {
    let sum = 0;
    const c = this.collected.get(name);
    for (const v of c ? c.read() : (this.series.get(name)?.values.values() ?? [])) sum += v.value;
    return sum;
  }

  /** The content type of `render()`'s text (Prometheus text format 0.0.4, UTF-8). */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** Everything in Prometheus' text format: doyen's series, histograms, process and Node.js metrics. */
  async render(): Promise<string> {
    for (const s of this.series.values())
      this.mirror(s.name, s.help, s.kind, () => s.values.values(), s.labelNames);
    for (const c of this.collected.values()) this.mirror(c.name, c.help, 'gauge', c.read);
    const own = await this.registry.metrics();
    return `${own.endsWith('\n') || own === '' ? own : `${own}\n`}${await this.processRegistry.metrics()}`;
  }

  /**
   * Makes (or remakes, when new label names appeared) the prom-client metric that reads a
   * series at scrape time. Rebuilt from the series each scrape, so remaking it loses nothing.
   */
  private mirror(
    name: string,
    help: string,
    kind: 'counter' | 'gauge',
    read: () => Iterable<{ labels: Labels; value: number }>,
    declared: ReadonlySet<string> = new Set(),
  ): void {
    const names = new Set<string>(declared);
    const values = [...read()];
    for (const v of values) for (const k of Object.keys(v.labels)) names.add(k);
    const labelNames = [...names].sort();
    const existing = this.mirrors.get(name);
    if (existing && existing.labelNames === labelNames.join(',')) return;
    if (existing) this.registry.removeSingleMetric(name);
    const collect = function (this: Counter | Gauge) {
      this.reset();
      for (const { labels, value } of read()) {
        if (kind === 'counter') (this as Counter).inc(labels as Record<string, string>, value);
        else (this as Gauge).set(labels as Record<string, string>, value);
      }
    };
    const options = { name, help, labelNames, registers: [this.registry], collect };
    const metric = kind === 'counter' ? new Counter(options) : new Gauge(options);
    this.mirrors.set(name, { metric, labelNames: labelNames.join(',') });
  }
}
