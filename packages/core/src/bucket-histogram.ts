import type { Registry } from 'prom-client';
import { labelKey } from './label-key.js';
import type { Labels } from './metric-catalogue.js';

/** One label set of a histogram: observing is a bucket search and three additions. */
export class HistogramSeries {
  /** Observations per bucket (not cumulative); the last slot counts those above every bound. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    readonly labels: Labels,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) return;
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    this.counts[i]!++;
    this.sum += value;
    this.count++;
  }
}

/** A sample as prom-client's registry renders it (the shape its own metrics' `get()` return). */
interface Sample {
  readonly metricName: string;
  readonly labels: Record<string, string | number>;
  readonly sharedLabels?: Labels;
  readonly value: number;
}

/**
 * A Prometheus histogram kept by doyen and rendered by prom-client's registry, in the text
 * prom-client's own Histogram renders. prom-client's `observe` builds a closure, validates the
 * labels and hashes them into a string on every call (~200 ns, a sixth of a local ask, issue 31);
 * here a caller takes its label set's series once (`series`) and observes into it directly.
 */
export class BucketHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly bySeries = new Map<string, HistogramSeries>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    private readonly bounds: readonly number[],
    registry: Registry,
  ) {
    registry.registerMetric(this as never);
  }

  /** The series of `labels` (made on first use, at 0: it renders from then on). */
  series(labels: Labels): HistogramSeries {
    const key = labelKey(labels);
    let series = this.bySeries.get(key);
    if (!series) {
      series = new HistogramSeries(labels, this.bounds);
      this.bySeries.set(key, series);
    }
    return series;
  }

  observe(labels: Labels, value: number): void {
    this.series(labels).observe(value);
  }

  /** Read by prom-client's registry when it renders. */
  get(): { name: string; help: string; type: string; aggregator: string; values: Sample[] } {
    const values: Sample[] = [];
    const bucket = `${this.name}_bucket`;
    for (const series of this.bySeries.values()) {
      const shared = series.labels;
      let cumulative = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        cumulative += series.counts[i]!;
        values.push({
          metricName: bucket,
          labels: { le: this.bounds[i]! },
          sharedLabels: shared,
          value: cumulative,
        });
      }
      values.push({ metricName: bucket, labels: { le: '+Inf' }, sharedLabels: shared, value: series.count });
      values.push({ metricName: `${this.name}_sum`, labels: {}, sharedLabels: shared, value: series.sum });
      values.push({
        metricName: `${this.name}_count`,
        labels: {},
        sharedLabels: shared,
        value: series.count,
      });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** Called by prom-client's `registry.resetMetrics()`. */
  reset(): void {
    this.bySeries.clear();
  }
}
