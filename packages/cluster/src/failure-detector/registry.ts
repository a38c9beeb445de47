import { createFailureDetector, type FailureDetector, type FailureDetectorConfig } from './detector.js';

/**
 * One failure detector per monitored peer, created on the peer's first heartbeat, as Akka's
 * DefaultFailureDetectorRegistry. Keys identify an incarnation (`host:port#uid`), so a restarted
 * process is a new key with a fresh history; the caller removes the old key when the member is
 * replaced or removed, so its history neither leaks nor judges the new incarnation.
 */
export class FailureDetectorRegistry<K extends string = string> {
  readonly #detectors = new Map<K, FailureDetector>();
  readonly #create: (key: K) => FailureDetector;

  /** Takes a detector config (default: phi accrual with its defaults) or a factory. */
  constructor(config: FailureDetectorConfig | ((key: K) => FailureDetector) = { kind: 'phi-accrual' }) {
    this.#create = typeof config === 'function' ? config : () => createFailureDetector(config);
    // Build one throw-away detector so a bad config fails here, not on the first heartbeat.
    if (typeof config !== 'function') createFailureDetector(config);
  }

  heartbeat(key: K, nowMs: number): void {
    let detector = this.#detectors.get(key);
    if (detector === undefined) {
      detector = this.#create(key);
      this.#detectors.set(key, detector);
    }
    detector.heartbeat(nowMs);
  }

  /** A peer not heard from yet (unknown key) is available: it is not monitored yet. */
  isAvailable(key: K, nowMs: number): boolean {
    return this.#detectors.get(key)?.isAvailable(nowMs) ?? true;
  }

  isMonitoring(key: K): boolean {
    return this.#detectors.get(key)?.isMonitoring ?? false;
  }

  /** The peer's detector, e.g. to read phi for metrics; undefined before its first heartbeat. */
  get(key: K): FailureDetector | undefined {
    return this.#detectors.get(key);
  }

  /** Forgets a peer's history (member removed, or replaced by a new incarnation). */
  remove(key: K): void {
    this.#detectors.delete(key);
  }

  /** Forgets every peer (e.g. on leaving the cluster or re-joining it). */
  reset(): void {
    this.#detectors.clear();
  }

  /** Keys of the peers currently monitored. */
  keys(): IterableIterator<K> {
    return this.#detectors.keys();
  }
}
