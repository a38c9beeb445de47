import type { OwnerLeasePort } from '../../packages/sharding/src/partition-keeper/keeper-host.js';

/**
 * An in-memory stand-in for @doyen/singleton's `OwnerLeases`, driven by the test: the own lease
 * is held once wanted (unless `hold(false)`), a fence completes when the test says so. Listeners
 * hear every change, as the real one's do.
 */
export class FakeOwnerLeases implements OwnerLeasePort {
  private wanted = false;
  private held = true;
  private readonly fenced = new Set<string>();
  readonly fenceAsked: string[] = [];
  private readonly listeners = new Set<() => void>();

  want(active: boolean): void {
    if (this.wanted === active) return;
    this.wanted = active;
    this.changed();
  }

  holdsOwn(): boolean {
    return this.wanted && this.held;
  }

  fence(key: string): void {
    this.fenceAsked.push(key);
  }

  isFenced(key: string): boolean {
    return this.fenced.has(key);
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The test's hand on the lease: lose it (false) or get it back (true). */
  hold(held: boolean): void {
    this.held = held;
    this.changed();
  }

  /** The test's hand on a fence: `key` is fenced from now on. */
  completeFence(key: string): void {
    this.fenced.add(key);
    this.changed();
  }

  private changed(): void {
    for (const listener of [...this.listeners]) listener();
  }
}
