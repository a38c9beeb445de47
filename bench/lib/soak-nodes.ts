// The soak's five node slots: each a `doyen node` process at fixed ports (a kill or restart starts a
// new process at the same ports, with the same identity key), running the CLI from its TypeScript
// sources under tsx with the soak app. From source, not packages/doyen/dist: the bench measures the
// code in the tree (a fix shows without a build), and the app module is TypeScript. Every process's
// log lines go to one listener, named by slot and process (`n2.p3`: slot 2's third process).
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NodeProcess } from '../../packages/testkit/src/node-process.js';
import { allUp, type CliNode } from './cli-nodes.js';
import { type SoakAppSettings, soakAppEnv } from './soak-protocol.js';
import { sourceNodeArgs } from './source-cli.js';

const SOAK_APP = fileURLToPath(new URL('./soak-app.ts', import.meta.url));

export interface SoakLine {
  /** `n<slot>.p<process>` */
  readonly proc: string;
  readonly slot: number;
  readonly json: Record<string, unknown>;
}

export interface SoakSlotsOptions {
  readonly cluster: string;
  readonly ports: readonly number[];
  readonly httpPorts: readonly number[];
  /** Where each slot keeps its identity key (a restart proves it is the member it replaces). */
  readonly keyDir: string;
  readonly secret: string;
  readonly token: string;
  readonly app: SoakAppSettings;
  /** The nodes' `--pause-bound-ms`: the stall their singleton guarantee is stated for. */
  readonly pauseBoundMs: number;
  readonly onLine: (line: SoakLine) => void;
  /** A process's fate: kill -9 by the bench, or any other exit (t: wall-clock ms). */
  readonly onFate: (fate: { proc: string; kind: 'killed' | 'exited'; t: number }) => void;
}

export class SoakSlots {
  readonly nodes: (CliNode | undefined)[];
  readonly procs: string[];
  private readonly started: number[];
  private readonly killedAt = new Map<NodeProcess, number>();

  constructor(private readonly options: SoakSlotsOptions) {
    this.nodes = options.ports.map(() => undefined);
    this.procs = options.ports.map(() => '');
    this.started = options.ports.map(() => 0);
  }

  get size(): number {
    return this.options.ports.length;
  }

  address(slot: number): string {
    return `127.0.0.1:${this.options.ports[slot]}`;
  }

  /** Starts a new process in `slot` (which must have none running); resolves once it logged `node.started`. */
  async start(slot: number, timeoutMs = 60_000): Promise<CliNode> {
    const { ports, httpPorts, cluster, keyDir, secret, token } = this.options;
    if (this.nodes[slot]?.running) throw new Error(`slot n${slot} still runs ${this.procs[slot]}`);
    const proc = `n${slot}.p${++this.started[slot]!}`;
    const port = ports[slot]!;
    const httpPort = httpPorts[slot]!;
    const seeds = ports.map((p) => `127.0.0.1:${p}`).join(',');
    const owned = NodeProcess.spawn({
      args: [
        ...sourceNodeArgs({ cluster, port, httpPort, seeds, app: SOAK_APP }),
        '--pause-bound-ms',
        String(this.options.pauseBoundMs),
        '--enable-fault-injection',
        '--identity-key-file',
        join(keyDir, `n${slot}.pem`),
      ],
      env: {
        DOYEN_SECRET: secret,
        DOYEN_HTTP_TOKEN: token,
        DOYEN_LOG_LEVEL: 'info',
        ...soakAppEnv(this.options.app),
      },
      http: { host: '127.0.0.1', port: httpPort },
      // an hour of logs would be gigabytes: every line goes to the listener, none is kept
      keepLogs: false,
      onLine: ({ json, text }) => {
        if (json) this.options.onLine({ proc, slot, json });
        else if (text.trim()) process.stderr.write(`[${proc}] ${text}\n`);
      },
    });
    const node: CliNode = Object.assign(owned, {
      address: this.address(slot),
      host: '127.0.0.1',
      port,
      httpPort,
    });
    this.nodes[slot] = node;
    this.procs[slot] = proc;
    void owned.exited.then(() => {
      const killed = this.killedAt.get(owned);
      this.options.onFate(
        killed !== undefined
          ? { proc, kind: 'killed', t: killed }
          : { proc, kind: 'exited', t: owned.exitedAt ?? Date.now() },
      );
    });
    const up = await owned.waitForLine((l) => l.json?.event === 'node.started', timeoutMs);
    if (!up) throw new Error(`${proc} did not log node.started within ${timeoutMs} ms`);
    return node;
  }

  /** kill -9 of the slot's process; resolves once it has exited. */
  async kill(slot: number): Promise<void> {
    const node = this.nodes[slot];
    if (!node?.running) return;
    this.killedAt.set(node, node.kill9());
    await node.exited;
  }

  /** SIGTERM (the node leaves the cluster and exits), kill -9 after `graceMs`. */
  async stop(slot: number, graceMs = 15_000): Promise<void> {
    const node = this.nodes[slot];
    if (!node?.running) return;
    const timer = setTimeout(() => this.killedAt.set(node, Date.now()), graceMs);
    await node.stop(graceMs);
    clearTimeout(timer);
  }

  pause(slot: number): void {
    this.nodes[slot]?.pause();
  }

  resume(slot: number): void {
    this.nodes[slot]?.resume();
  }

  /** Drops every link between the slots of `side` and the others, both ways (each node's POST /fault/blackhole). */
  async partition(side: readonly number[]): Promise<void> {
    const inSide = new Set(side);
    const all = Array.from({ length: this.size }, (_, i) => i);
    const rest = all.filter((i) => !inSide.has(i));
    await Promise.all(
      all.map((slot) =>
        this.post(slot, '/fault/blackhole', {
          peers: (inSide.has(slot) ? rest : side).map((i) => this.address(i)),
        }),
      ),
    );
  }

  /** Lifts every blackhole on every node. */
  async heal(): Promise<void> {
    await Promise.all(Array.from({ length: this.size }, (_, slot) => this.post(slot, '/fault/heal', {})));
  }

  /** Every slot runs and every node sees all of them up. */
  async whole(): Promise<boolean> {
    const nodes = this.nodes.filter((n): n is CliNode => n?.running === true);
    return nodes.length === this.size && allUp(nodes, this.size);
  }

  /** kill -9 of every process (the end of the run). */
  async killAll(): Promise<void> {
    await Promise.all(Array.from({ length: this.size }, (_, slot) => this.kill(slot)));
  }

  /** A state-changing management request as an operator sends it; false when the node did not take it. */
  private async post(slot: number, path: string, body: unknown): Promise<boolean> {
    const node = this.nodes[slot];
    if (!node?.running) return false;
    try {
      const res = await fetch(`http://127.0.0.1:${node.httpPort}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${this.options.token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(3_000),
      });
      await res.arrayBuffer();
      return res.ok;
    } catch {
      return false;
    }
  }
}
