import { requirePositiveInteger } from './errors.js';

/**
 * A bounded window of heartbeat inter-arrival times with O(1) mean and variance, like Akka's
 * HeartbeatHistory: once `maxSampleSize` samples are held, each new one evicts the oldest, so the
 * estimate follows the network as it is now rather than as it was an hour ago.
 *
 * Running sums make each heartbeat O(1); adding and subtracting floats drifts, so the sums are
 * recomputed from the samples once per full turn of the window (amortised O(1)).
 */
export class HeartbeatHistory {
  readonly #samples: number[] = [];
  #oldest = 0;
  #sum = 0;
  #squaredSum = 0;
  #evictionsSinceResum = 0;

  constructor(readonly maxSampleSize: number) {
    requirePositiveInteger('maxSampleSize', maxSampleSize);
  }

  add(intervalMs: number): void {
    this.#sum += intervalMs;
    this.#squaredSum += intervalMs * intervalMs;
    if (this.#samples.length < this.maxSampleSize) {
      this.#samples.push(intervalMs);
      return;
    }
    const evicted = this.#samples[this.#oldest]!;
    this.#samples[this.#oldest] = intervalMs;
    this.#oldest = (this.#oldest + 1) % this.maxSampleSize;
    this.#sum -= evicted;
    this.#squaredSum -= evicted * evicted;
    if (++this.#evictionsSinceResum >= this.maxSampleSize) this.#resum();
  }

  get size(): number {
    return this.#samples.length;
  }

  /** Mean interval in ms; 0 when empty. */
  get mean(): number {
    return this.size === 0 ? 0 : this.#sum / this.size;
  }

  /** Population variance (as Akka), clamped at 0 against rounding. */
  get variance(): number {
    if (this.size === 0) return 0;
    const mean = this.mean;
    return Math.max(0, this.#squaredSum / this.size - mean * mean);
  }

  get stdDeviation(): number {
    return Math.sqrt(this.variance);
  }

  #resum(): void {
    this.#evictionsSinceResum = 0;
    this.#sum = 0;
    this.#squaredSum = 0;
    for (const sample of this.#samples) {
      this.#sum += sample;
      this.#squaredSum += sample * sample;
    }
  }
}
