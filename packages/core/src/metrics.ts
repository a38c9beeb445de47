/** Counters and gauges with labels, rendered as Prometheus text. Deliberately tiny: no dependency. */
export type Labels = Readonly<Record<string, string>>;

interface Series {
  readonly name: string;
  readonly help: string;
  readonly kind: 'counter' | 'gauge';
  readonly values: Map<string, { labels: Labels; value: number }>;
}

function labelKey(labels: Labels): string {
  const keys = Object.keys(labels);
  // no labels or one (the common case on hot paths: per frame, per dead letter): nothing to sort
  if (keys.length === 0) return '';
  if (keys.length === 1) return `${keys[0]}=${labels[keys[0]!]}`;
  return keys
    .sort()
    .map((k) => `${k}=${labels[k]}`)
    .join(',');
}

/** A gauge read when the metrics are read (e.g. mailbox depths), so the hot path never writes it. */
interface Collected {
  readonly name: string;
  readonly help: string;
  readonly read: () => Iterable<{ labels: Labels; value: number }>;
}

export class Metrics {
  private readonly series = new Map<string, Series>();
  private readonly collected = new Map<string, Collected>();

  private get(name: string, help: string, kind: Series['kind']): Series {
    let s = this.series.get(name);
    if (!s) {
      s = { name, help, kind, values: new Map() };
      this.series.set(name, s);
    }
    return s;
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

  render(): string {
    const lines: string[] = [];
    const all = [
      ...[...this.series.values()].map((s) => ({ ...s, values: s.values.values() })),
      ...[...this.collected.values()].map((c) => ({ ...c, kind: 'gauge' as const, values: c.read() })),
    ];
    for (const s of all) {
      lines.push(`# HELP ${s.name} ${s.help}`, `# TYPE ${s.name} ${s.kind}`);
      for (const { labels, value } of s.values) {
        const keys = Object.keys(labels);
        const rendered = keys.length
          ? `{${keys.map((k) => `${k}="${String(labels[k]).replace(/["\\\n]/g, '_')}"`).join(',')}}`
          : '';
        lines.push(`${s.name}${rendered} ${value}`);
      }
    }
    return `${lines.join('\n')}\n`;
  }
}
