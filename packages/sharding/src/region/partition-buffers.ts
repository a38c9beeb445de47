import { RingBuffer } from '@doyen/core';
import type { RoutedMessage } from './routed-message.js';

/**
 * Messages held per partition while it is not active anywhere this node knows (moving,
 * recovering, no table yet), one queue per entity type so each type keeps its own bound; order
 * is kept per queue, which is per entity and so per sender. Over the bound the oldest goes
 * (`onDropped`: the caller dead-letters and counts it).
 */
export class PartitionBuffers {
  private readonly byPartition = new Map<number, Map<string, RingBuffer<RoutedMessage>>>();
  private total = 0;

  constructor(
    private readonly boundOf: (entityType: string) => number,
    private readonly onDropped: (message: RoutedMessage) => void,
  ) {}

  /** Messages held now, over every partition. */
  get size(): number {
    return this.total;
  }

  has(partition: number): boolean {
    return this.byPartition.has(partition);
  }

  sizeOf(partition: number): number {
    let n = 0;
    for (const q of this.byPartition.get(partition)?.values() ?? []) n += q.length;
    return n;
  }

  push(message: RoutedMessage): void {
    let types = this.byPartition.get(message.partition);
    if (!types) this.byPartition.set(message.partition, (types = new Map()));
    let queue = types.get(message.entityType);
    if (!queue) types.set(message.entityType, (queue = new RingBuffer()));
    queue.push(message);
    this.total++;
    if (queue.length > this.boundOf(message.entityType)) {
      const oldest = queue.shift()!;
      this.total--;
      this.onDropped(oldest);
    }
  }

  /** Everything held for `partition`, in arrival order per entity type; the partition is forgotten. */
  take(partition: number): RoutedMessage[] {
    const types = this.byPartition.get(partition);
    if (!types) return [];
    this.byPartition.delete(partition);
    const out: RoutedMessage[] = [];
    for (const queue of types.values()) out.push(...queue.drain());
    this.total -= out.length;
    return out;
  }

  partitions(): number[] {
    return [...this.byPartition.keys()];
  }
}
