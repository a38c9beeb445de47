/**
 * Hand-offs as the screen shows them: every node logs one `sharding.handed-off` line per partition
 * it hands over and one `sharding.partition-activated` per partition it takes; a move of dozens
 * of partitions becomes one event a short quiet moment after it, per node: "athens handed off 54
 * partitions; cyrene took 27".
 */
export interface HandOffTallyOptions {
  /** Quiet time that ends a burst. */
  readonly quietMs?: number;
  readonly onBurst: (text: string) => void;
}

export class HandOffTally {
  private handedOff = new Map<string, number>();
  private activated = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: HandOffTallyOptions) {}

  /** A node's log line; returns whether it was a hand-off or an activation. */
  line(node: string, json: Record<string, unknown>): boolean {
    const tally =
      json.event === 'sharding.handed-off'
        ? this.handedOff
        : json.event === 'sharding.partition-activated'
          ? this.activated
          : undefined;
    if (!tally) return false;
    tally.set(node, (tally.get(node) ?? 0) + 1);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.flush(), this.options.quietMs ?? 500);
    this.timer.unref();
    return true;
  }

  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const parts = [
      ...[...this.handedOff].map(([n, c]) => `${n} handed off ${c}`),
      ...[...this.activated].map(([n, c]) => `${n} activated ${c}`),
    ];
    this.handedOff = new Map();
    this.activated = new Map();
    if (parts.length) this.options.onBurst(`partitions: ${parts.join(', ')}`);
  }
}
