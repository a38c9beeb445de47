/** A growable FIFO queue on a power-of-two ring: O(1) push/shift without Array#shift's copying. */
export class RingBuffer<T> {
  private items: (T | undefined)[];
  private head = 0;
  private count = 0;

  constructor(initialCapacity = 16) {
    let size = 1;
    while (size < initialCapacity) size <<= 1;
    this.items = new Array(size);
  }

  get length(): number {
    return this.count;
  }

  push(item: T): void {
    if (this.count === this.items.length) this.grow();
    this.items[(this.head + this.count) & (this.items.length - 1)] = item;
    this.count++;
  }

  shift(): T | undefined {
    if (this.count === 0) return undefined;
    const item = this.items[this.head];
    this.items[this.head] = undefined;
    this.head = (this.head + 1) & (this.items.length - 1);
    this.count--;
    return item;
  }

  peek(): T | undefined {
    return this.count === 0 ? undefined : this.items[this.head];
  }

  /** Removes everything without returning it. */
  clear(): void {
    for (; this.count > 0; this.count--) {
      this.items[this.head] = undefined;
      this.head = (this.head + 1) & (this.items.length - 1);
    }
    this.head = 0;
  }

  /** Removes and returns everything, oldest first. */
  drain(): T[] {
    const out: T[] = [];
    for (let item = this.shift(); item !== undefined; item = this.shift()) out.push(item);
    return out;
  }

  private grow(): void {
    const bigger: (T | undefined)[] = new Array(this.items.length * 2);
    for (let i = 0; i < this.count; i++) bigger[i] = this.items[(this.head + i) & (this.items.length - 1)];
    this.items = bigger;
    this.head = 0;
  }
}
