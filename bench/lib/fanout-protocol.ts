// What `pnpm bench fanout`'s parent and its node processes say over IPC, and the latency record both kinds
// of node (doyen, raw ws) keep the same way.

/** Node -> parent, once listening: its port and the ids (doyen addresses or raw paths) of its actors. */
export type FanoutReady = { ready: true; port: number; targets: string[] };

export type FanoutRequestBody =
  /** The other nodes, by port and their actors' ids; the node connects to each. */
  | { cmd: 'peers'; peers: { port: number; targets: string[] }[] }
  /** Send `messages` to random actors on the other nodes, round-robin over them; reply once sent and received. */
  | { cmd: 'run'; messages: number };
/** Every request gets exactly one reply with the same `id`. */
export type FanoutRequest = FanoutRequestBody & { id: number };

export type FanoutReply =
  | { id: number }
  | {
      id: number;
      /** `nowUs()` when this node began sending and when it had received all it expected. */
      startUs: number;
      endUs: number;
      received: number;
      /** A systematic sample of send-to-receive latencies (µs), at most LATENCY_SAMPLES. */
      latenciesUs: number[];
      /** Messages dropped on the way (doyen dead letters and rejections; 0 for raw ws). */
      lost: number;
      /** CPU time (user + system, µs) this process used from `startUs` to `endUs`. */
      cpuUs: number;
      /**
       * Event-loop utilisation over the same span (0–1): near 1, the node was never idle, so its
       * throughput is its share of the CPU over the CPU a message costs.
       */
      elu: number;
    };

/** Wire message type of the doyen variant (registered on every node). */
export const FAN_MESSAGE_TYPE = 'bench.fan';
export type FanMessage = { type: typeof FAN_MESSAGE_TYPE; sentUs: number };

/** Latencies kept per node and run: enough for a p99 over the 5 nodes' merged samples. */
export const LATENCY_SAMPLES = 20_000;

/** Every message's latency (µs) of one run, sampled down at the end. */
export class LatencyRecord {
  private values: Float64Array;
  private n = 0;

  constructor(expected: number) {
    this.values = new Float64Array(Math.max(1, expected));
  }

  get count(): number {
    return this.n;
  }

  add(us: number): void {
    if (this.n === this.values.length) {
      const grown = new Float64Array(this.values.length * 2);
      grown.set(this.values);
      this.values = grown;
    }
    this.values[this.n++] = us;
  }

  sample(): number[] {
    const step = Math.max(1, Math.ceil(this.n / LATENCY_SAMPLES));
    const out: number[] = [];
    for (let i = 0; i < this.n; i += step) out.push(this.values[i]!);
    return out;
  }
}
