/**
 * The demo's node processes: spawns `doyen node` children (the compiled CLI),
 * kills, restarts, pauses, resumes, adds and removes them, and hands every log line on.
 * Children run in their own process group (a Ctrl-C in the terminal reaches only the demo, which
 * then stops them in order) and carry an orphan guard that ends them if the demo dies.
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { freePorts } from '../../../packages/testkit/src/free-ports.js';
import { NodeProcess, type OutputLine } from '../../../packages/testkit/src/node-process.js';

/** Node names in start order; the oldest is `athens`. */
export const NODE_NAMES = [
  'athens',
  'byzantium',
  'cyrene',
  'delphi',
  'ephesus',
  'fayum',
  'gortyn',
  'hierapolis',
  'ithaca',
  'jericho',
  'knossos',
  'lindos',
  'miletus',
  'naxos',
  'olympia',
  'pella',
  'rhodes',
  'sparta',
  'thebes',
  'utica',
] as const;

export function nodeName(index: number): string {
  return NODE_NAMES[index] ?? `node-${index + 1}`;
}

/** The repository root (this file is apps/partition-demo/src/cluster-processes.ts). */
export const REPO_ROOT = fileURLToPath(new URL('../../..', import.meta.url));
/** The compiled CLI (`pnpm build`): nodes run JavaScript, no TypeScript loader, as in production. */
const CLI = 'packages/doyen/dist/bin.js';
const GUARD = fileURLToPath(new URL('./orphan-guard.mjs', import.meta.url));

export type ProcState = 'starting' | 'running' | 'paused' | 'leaving' | 'exited';

export interface ExitInfo {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly at: number;
  /** What the demo asked for: a kill -9, a graceful remove, or the final shutdown. */
  readonly asked: 'kill' | 'remove' | 'shutdown' | undefined;
}

export interface ManagedNode {
  /** Row position, 0-based: `athens` is 0. */
  readonly index: number;
  readonly name: string;
  readonly port: number;
  readonly httpPort: number;
  /** The port the node's app listens on (named to it in `appPortEnv`), when the demo gives one. */
  readonly appPort: number | undefined;
  /** `127.0.0.1:port`, the address members know it by. */
  readonly address: string;
  state: ProcState;
  pid: number | undefined;
  /** How many times the demo spawned it. */
  launches: number;
  startedAt: number;
  exit: ExitInfo | undefined;
}

export interface LogLine {
  readonly node: ManagedNode;
  readonly at: number;
  readonly stream: 'stdout' | 'stderr';
  readonly text: string;
  /** The parsed JSON log line (pino), when it is one. */
  readonly json: Record<string, unknown> | undefined;
}

export interface ClusterProcessesOptions {
  readonly clusterName: string;
  /** Handed to every node in its environment (`DOYEN_SECRET`), never on its command line. */
  readonly secret: string;
  /** The management token (`DOYEN_HTTP_TOKEN`) fault injection needs. */
  readonly httpToken: string;
  /** One `<name>.log` per node, appended across restarts. */
  readonly logDir: string;
  /** HTTP management ports `httpBase`, `httpBase + 1`, … by row; free ports when absent. */
  readonly httpBase?: number;
  readonly host?: string;
  /** Extra `doyen node` arguments for every node. */
  readonly nodeArgs?: readonly string[];
  /** Gives each node a free port of its own for its app, in this environment variable. */
  readonly appPortEnv?: string;
  /** How long a node may take to come up before `start`/`add` gives up waiting (it keeps running). */
  readonly upTimeoutMs?: number;
  readonly onLine?: (line: LogLine) => void;
  readonly onChange?: (node: ManagedNode) => void;
}

interface Internals {
  child: NodeProcess | undefined;
  exited: Promise<void>;
  log: WriteStream;
  asked: ExitInfo['asked'];
  beforePause: ProcState;
  waiters: Array<{ test: (line: LogLine) => boolean; resolve: (ok: boolean) => void }>;
}

const isAlive = (n: ManagedNode) => n.state !== 'exited';

export class ClusterProcesses {
  readonly nodes: ManagedNode[] = [];
  private readonly internals = new Map<ManagedNode, Internals>();
  private readonly host: string;
  private closing = false;

  constructor(private readonly options: ClusterProcessesOptions) {
    this.host = options.host ?? '127.0.0.1';
  }

  /** The node called `name`; throws a readable error for an unknown one. */
  get(name: string): ManagedNode {
    const node = this.nodes.find((n) => n.name === name);
    if (!node) {
      throw new Error(
        `no node called ${name} (nodes: ${this.nodes.map((n) => n.name).join(', ') || 'none'})`,
      );
    }
    return node;
  }

  alive(): ManagedNode[] {
    return this.nodes.filter(isAlive);
  }

  /**
   * Starts `count` nodes one after the other, each once the previous one is up, so that ages
   * follow the names (athens is the oldest). Resolves when the last one is up.
   */
  async start(count: number): Promise<void> {
    for (let i = 0; i < count; i++) {
      const node = await this.create();
      if (this.closing) return;
      this.spawn(node);
      await this.whenUp(node);
    }
  }

  /** Adds a node with the next name and waits until it is up (or gave up). */
  async add(): Promise<ManagedNode> {
    const node = await this.create();
    this.spawn(node);
    await this.whenUp(node);
    return node;
  }

  /** kill -9: a crash, as the others see it. */
  async kill(name: string): Promise<void> {
    const node = this.get(name);
    if (!isAlive(node)) throw new Error(`${name} is not running`);
    await this.signalAndWait(node, 'SIGKILL', 'kill');
  }

  /** Starts a stopped node again at the same port; a running one is killed (kill -9) first. */
  async restart(name: string): Promise<void> {
    const node = this.get(name);
    if (isAlive(node)) await this.signalAndWait(node, 'SIGKILL', 'kill');
    this.spawn(node);
    await this.whenUp(node);
  }

  /** SIGSTOP: the process freezes (no heartbeats, no HTTP); `resume` continues it. */
  pause(name: string): void {
    const node = this.get(name);
    if (node.state === 'paused') return;
    if (!isAlive(node)) throw new Error(`${name} is not running`);
    this.signal(node, 'SIGSTOP');
    this.internals.get(node)!.beforePause = node.state;
    node.state = 'paused';
    this.changed(node);
  }

  resume(name: string): void {
    const node = this.get(name);
    if (node.state !== 'paused') return;
    this.signal(node, 'SIGCONT');
    node.state = this.internals.get(node)!.beforePause;
    this.changed(node);
  }

  /** Graceful: SIGTERM makes the node leave the cluster and exit 0 (kill -9 after `graceMs`). */
  async remove(name: string, graceMs = 20_000): Promise<void> {
    const node = this.get(name);
    if (!isAlive(node)) throw new Error(`${name} is not running`);
    if (node.state === 'paused') this.resume(name);
    const internals = this.internals.get(node)!;
    internals.asked = 'remove';
    node.state = 'leaving';
    this.changed(node);
    this.signal(node, 'SIGTERM');
    const timer = setTimeout(() => this.signal(node, 'SIGKILL'), graceMs);
    await internals.exited;
    clearTimeout(timer);
  }

  /**
   * Stops every node: SIGTERM (a graceful leave) one at a time, youngest row first, each given
   * up to `perNodeMs`; whatever still runs after `graceMs` in all gets SIGKILL. One at a time
   * because every member leaving at once is slower than a queue of single leaves. Resolves when
   * every child has exited.
   */
  async stopAll(graceMs = 5000, perNodeMs = 1500): Promise<void> {
    this.closing = true;
    const deadline = Date.now() + graceMs;
    const alive = this.alive();
    for (const node of [...alive].reverse()) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      if (!isAlive(node)) continue;
      const internals = this.internals.get(node)!;
      internals.asked ??= 'shutdown';
      if (node.state === 'paused') this.signal(node, 'SIGCONT');
      node.state = 'leaving';
      this.signal(node, 'SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        internals.exited,
        new Promise((r) => (timer = setTimeout(r, Math.min(perNodeMs, left)))),
      ]);
      clearTimeout(timer);
    }
    for (const node of this.alive()) {
      this.internals.get(node)!.asked ??= 'shutdown';
      this.signal(node, 'SIGCONT');
      this.signal(node, 'SIGKILL');
    }
    await Promise.all(alive.map((n) => this.internals.get(n)!.exited));
    for (const { log } of this.internals.values()) log.end();
  }

  /** For `process.on('exit')`: kill -9 whatever still runs, synchronously. */
  killAllNow(): void {
    for (const node of this.alive()) this.signal(node, 'SIGKILL');
  }

  /** Resolves true at the first log line of `node` that passes `test`, false after `timeoutMs`. */
  waitForLine(node: ManagedNode, test: (line: LogLine) => boolean, timeoutMs: number): Promise<boolean> {
    const internals = this.internals.get(node);
    if (!internals) return Promise.resolve(false);
    return new Promise((resolve) => {
      const waiter = {
        test,
        resolve: (ok: boolean) => {
          clearTimeout(timer);
          internals.waiters.splice(internals.waiters.indexOf(waiter), 1);
          resolve(ok);
        },
      };
      const timer = setTimeout(() => waiter.resolve(false), timeoutMs);
      internals.waiters.push(waiter);
    });
  }

  private async whenUp(node: ManagedNode): Promise<void> {
    if (node.state === 'running') return;
    const internals = this.internals.get(node)!;
    await Promise.race([
      this.waitForLine(node, (l) => l.json?.event === 'node.started', this.options.upTimeoutMs ?? 20_000),
      internals.exited,
    ]);
  }

  private async create(): Promise<ManagedNode> {
    const index = this.nodes.length;
    const [port, freeHttp, appPort] = await freePorts(3, this.host);
    const httpPort = this.options.httpBase !== undefined ? this.options.httpBase + index : freeHttp!;
    const node: ManagedNode = {
      index,
      name: nodeName(index),
      port: port!,
      httpPort,
      appPort: this.options.appPortEnv ? appPort : undefined,
      address: `${this.host}:${port}`,
      state: 'exited',
      pid: undefined,
      launches: 0,
      startedAt: 0,
      exit: undefined,
    };
    this.nodes.push(node);
    this.internals.set(node, {
      child: undefined,
      exited: Promise.resolve(),
      log: createWriteStream(join(this.options.logDir, `${node.name}.log`), { flags: 'a' }),
      asked: undefined,
      beforePause: 'running',
      waiters: [],
    });
    return node;
  }

  /**
   * Seeds: the first two nodes, then the other running ones (a node started while both first
   * seeds are down still finds the cluster). A node's own address comes first only when nobody
   * else runs: the first seed may form a new cluster when no other seed answers in time, and a
   * restarted `athens` must rejoin the running cluster, never start a second one beside it.
   */
  private seedsFor(node: ManagedNode): string {
    const others = this.alive().filter((n) => n !== node);
    if (others.length === 0) return node.address;
    const seeds = [...this.nodes.slice(0, 2), ...others].filter((n) => n !== node).map((n) => n.address);
    return [...new Set(seeds)].join(',');
  }

  private spawn(node: ManagedNode): void {
    if (this.closing) throw new Error('the demo is shutting down');
    const internals = this.internals.get(node)!;
    const args = [
      '--import',
      pathToFileURL(GUARD).href,
      CLI,
      'node',
      '--cluster',
      this.options.clusterName,
      '--host',
      this.host,
      '--port',
      String(node.port),
      '--seeds',
      this.seedsFor(node),
      '--name',
      node.name,
      '--http-port',
      String(node.httpPort),
      '--enable-fault-injection',
      ...(this.options.nodeArgs ?? []),
    ];
    const child = NodeProcess.spawn({
      args,
      cwd: REPO_ROOT,
      // stdin stays open: the orphan guard in the child ends it when this pipe closes
      stdin: 'pipe',
      detached: true,
      keepLogs: false,
      env: {
        DOYEN_DEMO_CHILD: '1',
        DOYEN_LOG_LEVEL: 'info',
        FORCE_COLOR: '0',
        DOYEN_SECRET: this.options.secret,
        DOYEN_HTTP_TOKEN: this.options.httpToken,
        ...(this.options.appPortEnv && node.appPort
          ? { [this.options.appPortEnv]: String(node.appPort) }
          : {}),
      },
      onLine: (line) => this.take(node, line),
    });
    internals.child = child;
    internals.asked = undefined;
    node.pid = child.pid;
    node.launches++;
    node.startedAt = Date.now();
    node.exit = undefined;
    node.state = 'starting';
    internals.log.write(
      `--- ${new Date().toISOString()} demo: spawn #${node.launches} pid ${child.pid} ${args.join(' ')}\n`,
    );
    child.process.once('error', (error) => internals.log.write(`--- demo: spawn failed: ${error.message}\n`));
    internals.exited = child.exited.then(({ code, signal }) => {
      node.state = 'exited';
      node.exit = { code, signal, at: child.exitedAt ?? Date.now(), asked: internals.asked };
      internals.child = undefined;
      internals.log.write(`--- ${new Date().toISOString()} demo: exit code ${code} signal ${signal}\n`);
      this.changed(node);
    });
    this.changed(node);
  }

  /** One output line of a node: to its log file, its state (`node.started`), the waiters, the view. */
  private take(node: ManagedNode, { stream, text, json, at }: OutputLine): void {
    const internals = this.internals.get(node)!;
    internals.log.write(`${text}\n`);
    const line: LogLine = { node, at, stream, text, json };
    if (json?.event === 'node.started') {
      if (node.state === 'starting') node.state = 'running';
      if (node.state === 'paused') internals.beforePause = 'running';
      this.changed(node);
    }
    for (const w of [...internals.waiters]) if (w.test(line)) w.resolve(true);
    this.options.onLine?.(line);
  }

  private async signalAndWait(node: ManagedNode, signal: NodeJS.Signals, asked: ExitInfo['asked']) {
    const internals = this.internals.get(node)!;
    internals.asked = asked;
    this.signal(node, signal);
    await internals.exited;
  }

  private signal(node: ManagedNode, signal: NodeJS.Signals): void {
    this.internals.get(node)?.child?.signal(signal);
  }

  private changed(node: ManagedNode): void {
    this.options.onChange?.(node);
  }
}
