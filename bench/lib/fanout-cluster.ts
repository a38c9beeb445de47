// The parent side of `pnpm bench fanout`: N node processes of one kind (doyen or raw ws), all-to-all,
// and one measured round at a time across all of them.
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { FanoutReady, FanoutReply, FanoutRequestBody } from './fanout-protocol.js';
import { type IpcChild, startIpcChild } from './ipc-child.js';
import { percentile } from './stats.js';
import { withTimeout } from './timeout.js';

export type FanoutKind = 'doyen' | 'raw';

export type FanoutRound = {
  /** Messages received on all nodes over the span from the first node's start to the last node's end. */
  perSec: number;
  p50Us: number;
  p99Us: number;
  /** Dead letters and wire rejections on all nodes so far (doyen; 0 for raw ws). */
  lost: number;
  /**
   * CPU time of all node processes per message received (µs): on a loaded machine the throughput
   * says how much CPU the bench got, this says how much each message cost.
   */
  cpuUsPerMsg: number;
  /** The nodes' mean event-loop utilisation over their spans (see FanoutReply). */
  elu: number;
};

type RunReply = Extract<FanoutReply, { startUs: number }>;

const scripts: Record<FanoutKind, string> = {
  doyen: fileURLToPath(new URL('./fanout-doyen-node.ts', import.meta.url)),
  raw: fileURLToPath(new URL('./fanout-raw-node.ts', import.meta.url)),
};

class NodeChannel {
  private readonly pending = new Map<
    number,
    { resolve: (r: FanoutReply) => void; reject: (e: Error) => void }
  >();
  private nextId = 0;

  constructor(readonly node: IpcChild<FanoutReady>) {
    const child: ChildProcess = node.child;
    child.on('message', (reply: FanoutReply) => {
      const waiter = this.pending.get(reply.id);
      this.pending.delete(reply.id);
      waiter?.resolve(reply);
    });
    child.on('exit', (code, signal) => {
      for (const waiter of this.pending.values())
        waiter.reject(new Error(`fanout node exited (${code ?? signal})`));
      this.pending.clear();
    });
  }

  request<R extends FanoutReply>(body: FanoutRequestBody, timeoutMs: number, what: string): Promise<R> {
    const id = this.nextId++;
    const replied = new Promise<FanoutReply>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.node.child.send({ id, ...body });
    });
    return withTimeout(replied, timeoutMs, what).finally(() => this.pending.delete(id)) as Promise<R>;
  }
}

export class FanoutCluster {
  private constructor(
    readonly kind: FanoutKind,
    private readonly nodes: NodeChannel[],
  ) {}

  /** Starts `nodes` processes with `actors` actors each and connects every one to every other. */
  static async start(kind: FanoutKind, nodes: number, actors: number): Promise<FanoutCluster> {
    const started: NodeChannel[] = [];
    const cluster = new FanoutCluster(kind, started);
    try {
      for (let i = 0; i < nodes; i++) {
        const node = await startIpcChild<FanoutReady>(scripts[kind], `fanout ${kind} node ${i}`, {
          FANOUT_ACTORS: String(actors),
        });
        started.push(new NodeChannel(node));
      }
      await Promise.all(
        started.map((channel, i) =>
          channel.request(
            {
              cmd: 'peers',
              peers: started
                .filter((_, j) => j !== i)
                .map((other) => ({ port: other.node.ready.port, targets: other.node.ready.targets })),
            },
            15_000,
            `connecting fanout ${kind} node ${i}`,
          ),
        ),
      );
      return cluster;
    } catch (error) {
      await cluster.close();
      throw error;
    }
  }

  /**
   * Every node sends `messagesPerNode` (a multiple of nodes - 1, so each node receives as many), all at
   * once; resolves when every node has received its share.
   */
  async round(messagesPerNode: number): Promise<FanoutRound> {
    const replies = await Promise.all(
      this.nodes.map((channel, i) =>
        channel.request<RunReply>(
          { cmd: 'run', messages: messagesPerNode },
          180_000,
          `fanout ${this.kind} node ${i}: a round of ${messagesPerNode}`,
        ),
      ),
    );
    const start = Math.min(...replies.map((r) => r.startUs));
    const end = Math.max(...replies.map((r) => r.endUs));
    const latencies = replies.flatMap((r) => r.latenciesUs);
    return {
      perSec: (messagesPerNode * this.nodes.length) / ((end - start) / 1e6),
      p50Us: percentile(latencies, 50),
      p99Us: percentile(latencies, 99),
      lost: replies.reduce((sum, r) => sum + r.lost, 0),
      cpuUsPerMsg: replies.reduce((sum, r) => sum + r.cpuUs, 0) / (messagesPerNode * this.nodes.length),
      elu: replies.reduce((sum, r) => sum + r.elu, 0) / replies.length,
    };
  }

  async close(): Promise<void> {
    await Promise.all(this.nodes.map((channel) => channel.node.stop()));
  }
}
