/**
 * The running demo: the node processes, the poller, the event list and the fault state, with
 * the actions keys and scripts use (by node name) and the view model of the screen.
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { describeCheck } from './cart-book.js';
import { CartLoad } from './cart-load.js';
import { ClusterProcesses, type LogLine, type ManagedNode } from './cluster-processes.js';
import { type CheckResult, type Condition, check } from './conditions.js';
import { type DemoEvent, EventLog } from './events.js';
import { HandOffTally } from './hand-off-tally.js';
import { nameResolver, type ObservedNode, observe } from './observe.js';
import { entitiesOf, type NodeSnapshot, Poller } from './poller.js';
import type { CartsStep, ScriptTarget } from './script.js';
import type { ViewModel, ViewRow } from './view.js';

export interface DemoOptions {
  readonly nodes: number;
  readonly logDir: string;
  readonly clusterName?: string;
  readonly httpBase?: number;
  readonly nodeArgs?: readonly string[];
  readonly pollMs?: number;
  /** The cart load `carts start` drives without numbers (default 200 carts, 100 adds/s). */
  readonly carts?: { readonly count: number; readonly rate: number };
  /** Every new event (plain output prints them). */
  readonly onEvent?: (event: DemoEvent) => void;
}

const HOST = '127.0.0.1';

/** Every node runs the cart app: a sharded `cart` entity and its HTTP front (on this variable's port). */
const CART_APP = fileURLToPath(new URL('./cart-app.mjs', import.meta.url));
const CART_PORT_ENV = 'DOYEN_DEMO_CART_PORT';
export const DEFAULT_CARTS = { count: 200, rate: 100 } as const;

/** This run's cluster secret and management token: random, handed to the nodes in their environment. */
const SECRET = randomBytes(16).toString('hex');
const HTTP_TOKEN = randomBytes(16).toString('hex');

async function post(port: number, path: string, body?: unknown): Promise<void> {
  const res = await fetch(`http://${HOST}:${port}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${HTTP_TOKEN}` },
    body: JSON.stringify(body ?? {}),
    signal: AbortSignal.timeout(2000),
  });
  const text = await res.text();
  if (res.status === 404) throw new Error(`${path} answers 404 (started without --enable-fault-injection?)`);
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status} ${text.trim()}`);
}

export function processText(node: ManagedNode): string {
  if (node.state !== 'exited') return node.state;
  const exit = node.exit;
  if (!exit) return 'not started';
  if (exit.asked === 'remove' && exit.code === 0) return 'left';
  if (exit.signal === 'SIGKILL') return 'killed';
  if (exit.asked === 'shutdown') return 'stopped';
  return exit.code !== null ? `exit ${exit.code}` : (exit.signal ?? 'exited');
}

export class Demo implements ScriptTarget {
  readonly processes: ClusterProcesses;
  readonly poller: Poller;
  readonly events: EventLog;
  readonly startedAt = Date.now();
  readonly clusterName: string;
  /** The two sides of the current partition. */
  fault: [string[], string[]] | undefined;
  /** Row of the node the keys act on. */
  selected = 0;
  lastAction: string | undefined;
  script: ViewModel['script'];
  /** The cart load, once started. */
  cartLoad: CartLoad | undefined;
  private lastCartCheck: string | undefined;
  private readonly handOffs: HandOffTally;
  private readonly uids = new Map<string, Set<string>>();

  constructor(private readonly options: DemoOptions) {
    this.clusterName = options.clusterName ?? 'partition-demo';
    this.events = new EventLog(options.onEvent ? { onEvent: options.onEvent } : {});
    this.handOffs = new HandOffTally({ onBurst: (text) => this.events.addDemo(text) });
    this.processes = new ClusterProcesses({
      clusterName: this.clusterName,
      secret: SECRET,
      httpToken: HTTP_TOKEN,
      logDir: options.logDir,
      host: HOST,
      ...(options.httpBase !== undefined ? { httpBase: options.httpBase } : {}),
      nodeArgs: [...(options.nodeArgs ?? []), '--app', CART_APP],
      appPortEnv: CART_PORT_ENV,
      onLine: (line) => this.onLine(line),
      onChange: (node) => this.onProcessChange(node),
    });
    this.poller = new Poller({
      host: HOST,
      intervalMs: options.pollMs ?? 300,
      targets: () =>
        this.processes.nodes
          .filter((n) => n.state !== 'exited')
          .map((n) => ({ name: n.name, httpPort: n.httpPort, skip: n.state === 'paused' })),
      onUpdate: (name, snapshot) => this.noteUid(name, snapshot),
    });
  }

  /** Starts the poller and the nodes, one after the other; resolves when the last is up. */
  async start(): Promise<void> {
    this.poller.start();
    this.events.addDemo(`starting ${this.options.nodes} nodes (logs in ${this.options.logDir})`);
    await this.processes.start(this.options.nodes);
  }

  async shutdown(): Promise<void> {
    this.poller.stop();
    await this.cartLoad?.stop();
    await this.processes.stopAll(5000);
  }

  observedNodes(): ObservedNode[] {
    return this.processes.nodes.map((n) => ({
      name: n.name,
      address: n.address,
      state: n.state,
      snapshot: this.poller.snapshot(n.name),
    }));
  }

  check(condition: Condition): CheckResult {
    const nodes = this.observedNodes();
    const now = Date.now();
    return check(condition, nodes, observe(nodes, now), now);
  }

  selectedName(): string | undefined {
    return this.processes.nodes[this.selected]?.name;
  }

  get logDir(): string {
    return this.options.logDir;
  }

  // ---- actions (keys and scripts) ----

  async kill(name: string): Promise<void> {
    this.action(`kill -9 ${name}`);
    await this.processes.kill(name);
  }

  async restart(name: string): Promise<void> {
    this.action(`restart ${name}`);
    this.poller.forget(name);
    await this.processes.restart(name);
  }

  async remove(name: string): Promise<void> {
    this.action(`remove ${name} (graceful leave)`);
    await this.processes.remove(name);
  }

  /** SIGSTOP; with `ms`, SIGCONT after that long (and the promise waits for it). */
  async pause(name: string, ms?: number): Promise<void> {
    this.action(`pause ${name}${ms ? ` for ${(ms / 1000).toFixed(1)} s` : ''} (SIGSTOP)`);
    this.processes.pause(name);
    if (ms !== undefined) {
      await new Promise((r) => setTimeout(r, ms));
      await this.resume(name);
    }
  }

  async resume(name: string): Promise<void> {
    this.action(`resume ${name} (SIGCONT)`);
    this.processes.resume(name);
  }

  async togglePause(name: string): Promise<void> {
    if (this.processes.get(name).state === 'paused') await this.resume(name);
    else await this.pause(name);
  }

  async add(): Promise<string> {
    this.action('add a node');
    const node = await this.processes.add();
    this.action(`added ${node.name} (${node.address})`);
    return node.name;
  }

  /**
   * The cart load: `start` drives it (made on first use; the same carts on later starts), `stop`
   * waits for every answer, `check` stops it, asks every cart and compares (cart-book.ts).
   */
  async cartsStep(step: CartsStep): Promise<string> {
    if (step.action === 'start') {
      const count =
        step.count ?? this.cartLoad?.book.ids.length ?? this.options.carts?.count ?? DEFAULT_CARTS.count;
      const rate = step.rate ?? this.cartLoad?.rate ?? this.options.carts?.rate ?? DEFAULT_CARTS.rate;
      // one set of carts per run: its books hold what each cart acknowledged
      if (this.cartLoad && count !== this.cartLoad.book.ids.length)
        throw new Error(`the demo drives ${this.cartLoad.book.ids.length} carts already`);
      this.cartLoad ??= this.newLoad(count, rate);
      this.cartLoad.rate = rate;
      this.cartLoad.start();
      this.action(`cart load: ${count} carts, ${rate} adds/s`);
      return `driving ${count} carts at ${rate} adds/s`;
    }
    const load = this.cartLoad;
    if (!load) throw new Error('no cart load yet: carts start first');
    await load.stop();
    if (step.action === 'stop') {
      const t = load.book.totals();
      this.action('cart load stopped');
      return `load stopped: ${t.acked} adds acknowledged, ${t.unanswered} unanswered`;
    }
    const result = load.book.check(await load.read());
    const text = describeCheck(result);
    this.lastCartCheck = text;
    this.events.addDemo(`carts: ${text}`, Date.now(), result.problems.length ? 'error' : 'info');
    if (result.problems.length) throw new Error(text);
    if (step.noLoss && result.restartedEmpty)
      throw new Error(`${text}: planned moves only since the last check, yet carts restarted empty`);
    return text;
  }

  carts(step: CartsStep): Promise<string> {
    return this.cartsStep(step);
  }

  private newLoad(count: number, rate: number): CartLoad {
    return new CartLoad({
      carts: count,
      rate,
      host: HOST,
      fronts: () =>
        this.processes.nodes.flatMap((n) =>
          n.state === 'running' && n.appPort ? [{ name: n.name, port: n.appPort }] : [],
        ),
    });
  }

  /** Blackholes traffic between the two sides, on every running node of each side. */
  async partition(a: readonly string[], b: readonly string[]): Promise<void> {
    for (const name of [...a, ...b]) this.processes.get(name);
    this.fault = [[...a], [...b]];
    this.action(`partition ${a.join(',')} | ${b.join(',')}`);
    const results = await Promise.allSettled([
      ...a.map((n) => this.blackhole(n, b)),
      ...b.map((n) => this.blackhole(n, a)),
    ]);
    const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed.length === results.length) throw new Error(`no node took the partition: ${failed[0]?.reason}`);
  }

  /** Partitions the running nodes into two halves (the first half the larger one). */
  async split(): Promise<void> {
    const running = this.processes.alive().map((n) => n.name);
    if (running.length < 2) throw new Error('split needs at least two running nodes');
    const half = Math.ceil(running.length / 2);
    await this.partition(running.slice(0, half), running.slice(half));
  }

  async heal(): Promise<void> {
    this.action('heal');
    this.fault = undefined;
    const targets = this.processes.alive().filter((n) => n.state !== 'paused');
    const results = await Promise.allSettled(targets.map((n) => post(n.httpPort, '/fault/heal')));
    const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (targets.length && failed.length === targets.length)
      throw new Error(`no node took the heal: ${failed[0]?.reason}`);
  }

  // ---- the screen ----

  model(extra: { keys?: string } = {}): ViewModel {
    const now = Date.now();
    const nodes = this.observedNodes();
    const o = observe(nodes, now);
    const rows: ViewRow[] = this.processes.nodes.map((n, i) => {
      const r = o.rows.get(n.name);
      const alive = n.state !== 'exited';
      let sees: string | undefined;
      if (n.state === 'paused') sees = '(paused)';
      else if (alive && !r?.fresh) sees = '(no answer)';
      else if (alive && r) {
        sees =
          r.selfStatus === 'up'
            ? `${r.seesUp} up, ${r.seesCoordinator ?? 'no coordinator'}`
            : `${r.selfStatus ?? '?'}${r.seesCoordinator ? `, ${r.seesCoordinator}` : ''}`;
      }
      return {
        number: i + 1,
        name: n.name,
        port: n.port,
        process: processText(n),
        status: r?.member?.status,
        reachable: r?.member?.reachable,
        age: r?.member?.age,
        incarnation: this.uids.get(n.name)?.size,
        partitions: r?.partitions,
        entities: alive ? entitiesOf(this.poller.snapshot(n.name).shards) : undefined,
        coordinator: r?.isCoordinator ?? false,
        allocator: r?.runsAllocator ?? false,
        sees,
        selected: i === this.selected,
      };
    });
    return {
      cluster: this.clusterName,
      now,
      uptimeMs: now - this.startedAt,
      running: o.alive,
      total: this.processes.nodes.length,
      coordinator: o.coordinator && {
        name: o.coordinator.name,
        address: o.coordinator.address,
        votes: o.coordinator.votes,
        of: o.alive,
        majority: o.coordinator.majority,
      },
      otherCoordinators: o.others.map((v) => ({ name: v.name, votes: v.votes })),
      singletons: [...o.singletons].map(([name, on]) => ({ name, on })),
      table: o.balance,
      missing: o.missing,
      fault: this.fault,
      rows,
      events: this.events.recent(30),
      script: this.script,
      lastAction: this.lastAction,
      keys: extra.keys,
      logDir: this.options.logDir,
      carts: this.cartLoad && {
        carts: this.cartLoad.book.ids.length,
        rate: this.cartLoad.rate,
        running: this.cartLoad.running,
        totals: this.cartLoad.book.totals(),
        lastCheck: this.lastCartCheck,
      },
    };
  }

  // ---- internals ----

  private action(text: string): void {
    this.lastAction = text;
    this.events.addDemo(text);
  }

  private async blackhole(name: string, others: readonly string[]): Promise<void> {
    const node = this.processes.get(name);
    if (node.state === 'exited' || node.state === 'paused') return;
    const peers = others.map((o) => this.processes.get(o).address);
    await post(node.httpPort, '/fault/blackhole', { peers });
  }

  /** A (re)started process or a new incarnation forgets its blackholes: apply its side's again. */
  private reapplyFault(name: string): void {
    const fault = this.fault;
    if (!fault) return;
    const [a, b] = fault;
    const others = a.includes(name) ? b : b.includes(name) ? a : undefined;
    if (others) void this.blackhole(name, others).catch(() => {});
  }

  private onLine(line: LogLine): void {
    const name = line.node.name;
    if (line.json) {
      if (this.handOffs.line(name, line.json)) return;
      const nameOf = nameResolver(this.observedNodes());
      this.events.addLogLine(name, line.json, line.at, nameOf);
      if (line.json.event === 'fault.enabled') this.reapplyFault(name);
      if (line.json.event === 'node.restart') setTimeout(() => this.reapplyFault(name), 1000).unref();
    } else if (
      line.stream === 'stderr' &&
      !line.text.startsWith('(node:') &&
      !line.text.startsWith('(Use `node')
    ) {
      this.events.addText(name, line.text, line.at);
    }
  }

  private onProcessChange(node: ManagedNode): void {
    if (node.state !== 'exited' || !node.exit) return;
    this.poller.forget(node.name);
    const asked = node.exit.asked;
    const text = processText(node);
    // a kill -9 the demo did needs no second line; a leave that finished, or a surprise, does
    if (asked === 'shutdown' || asked === 'kill') return;
    this.events.addDemo(
      `${node.name} process ended: ${text}${asked ? '' : ' (not asked to)'}`,
      node.exit.at,
      asked ? 'info' : 'error',
    );
  }

  private noteUid(name: string, snapshot: NodeSnapshot): void {
    const uid = snapshot.cluster?.uid;
    if (!uid) return;
    const set = this.uids.get(name) ?? new Set<string>();
    set.add(uid);
    this.uids.set(name, set);
  }
}
