/** Counters and gauges with labels, rendered as Prometheus text. Deliberately tiny: no dependency. */
export type Labels = Readonly<Record<string, string>>;

interface Series {
  readonly name: string;
  readonly help: string;
  readonly kind: 'counter' | 'gauge';
  readonly values: Map<string, { labels: Labels; value: number }>;
}

function labelKey(labels: Labels): string {
  return Object.keys(labels)
    .sort()
    .map((k) => `${k}=${labels[k]}`)
    .join(',');
}

export class Metrics {
  private readonly series = new Map<string, Series>();

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

  /** Current value of one series (0 when never touched). */
  value(name: string, labels: Labels = {}): number {
    return this.series.get(name)?.values.get(labelKey(labels))?.value ?? 0;
  }

  /** Sum over all label sets of one series. */
  total(name: string): number {
    let sum = 0;
    for (const v of this.series.get(name)?.values.values() ?? []) sum += v.value;
    return sum;
  }

  render(): string {
    const lines: string[] = [];
    for (const s of this.series.values()) {
      lines.push(`# HELP ${s.name} ${s.help}`, `# TYPE ${s.name} ${s.kind}`);
      for (const { labels, value } of s.values.values()) {
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
