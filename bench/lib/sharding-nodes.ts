// The sharding bench's processes: hosting node slots (`doyen node --roles shard`, fixed ports, a
// restart starts a new process at the same ports) and the load generator's node (no role), all
// running the built CLI (packages/doyen/dist, as users run `doyen node`; its TypeScript sources
// under tsx with `fromSource`) with bench/lib/sharding-app.ts. Keeps what the figures need from the
// logs: entity activations and stops (for the overlap check), partition activations (for moves),
// every process's fate and the log lines that never arrived.
import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ShardRegionsView } from '../../packages/sharding/src/index.js';
import { perEntityLines } from '../../packages/sharding/src/region/entity-log-lines.js';
import type { InstanceLogLine, ProcessFate } from '../../packages/testkit/src/instance-overlaps.js';
import { NodeProcess } from '../../packages/testkit/src/node-process.js';
import { builtCliArgs } from './built-cli.js';
import { freePorts } from './free-ports.js';
import { LOAD_PORT_ENV, SHARD_ROLE } from './sharding-protocol.js';
import { sourceCliArgs } from './source-cli.js';

const APP = fileURLToPath(new URL('./sharding-app.ts', import.meta.url));
/** Set to a directory to keep every process's log there (`<proc>.log`), for looking into a run. */
const LOG_DIR = process.env.SHARDING_BENCH_LOG_DIR;
if (LOG_DIR) mkdirSync(LOG_DIR, { recursive: true });
/** The hosting nodes' log level (default info; debug shows each partition's keeper steps). */
const LOG_LEVEL = process.env.SHARDING_BENCH_LOG_LEVEL ?? 'info';
const LOG_ENTITIES = process.env.SHARDING_BENCH_LOG_ENTITIES === '1';
const ENTITY_LINE = /"event":"sharding\.(activated|passivated|partition-passivated)"/;
/** Set to a directory to CPU-profile every hosting process (`<proc>/`, one file per thread, written as it exits). */
export const CPU_PROF_DIR = process.env.SHARDING_BENCH_CPU_PROF;
/** SHARDING_BENCH_CPU_PROF_LOAD=1: the load generator's node is profiled too (the senders' side). */
const CPU_PROF_LOAD = process.env.SHARDING_BENCH_CPU_PROF_LOAD === '1';
/**
 * SHARDING_BENCH_NODE_FLAGS="--trace-gc …": node options for every node process, before the CLI's
 * script (node refuses V8's tracing flags in NODE_OPTIONS).
 */
const NODE_FLAGS = process.env.SHARDING_BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? [];
/** Events counted in `eventCounts`: load on the machine shows in them, not in the latency alone. */
export const COUNTED_EVENTS = [
  'sharding.lease-lost',
  'partitions.retired',
  'partitions.retire-incomplete',
  'node.restart',
] as const;
const COUNTED: ReadonlySet<string> = new Set(COUNTED_EVENTS);

/** One entity's start or stop as the overlap check reads it. */
export interface EntityLine extends InstanceLogLine {
  readonly entityId: string;
}

/** GET /cluster/shards as the bench reads it. */
export type ShardsView = Pick<ShardRegionsView, 'activePartitions' | 'regions'>;

export class ShardingProcesses {
  readonly nodes: (NodeProcess | undefined)[];
  readonly procs: string[];
  readonly entityLines: EntityLine[] = [];
  /** From the `sharding.partitions-activated` lines: which partition became active where, when. */
  readonly partitionActivations: { proc: string; partition: number; t: number }[] = [];
  readonly fates: ProcessFate[] = [];
  /**
   * Lines of `COUNTED_EVENTS` over every process: what stood in a fault's way (owner lease lapses,
   * retires given up, re-incarnations), compared before and after a scenario.
   */
  readonly eventCounts = new Map<string, number>();
  /** GC pauses of every process (`bench.gc` lines, with SHARDING_BENCH_GC=1): wall-clock start, ms. */
  readonly gcPauses: { proc: string; at: number; ms: number }[] = [];
  /** Event-loop stalls of every process (`bench.stall` lines, with SHARDING_BENCH_STALLS=1). */
  readonly stalls: { proc: string; at: number; ms: number; cpuMs: number }[] = [];
  /** Which process (name) has which pid, from its log lines. */
  readonly procOfPid = new Map<number, string>();
  /** Wall-clock ms at which each process started. */
  readonly startedAt = new Map<string, number>();
  load: NodeProcess | undefined;
  /** Every process spawned, by name (exited ones too): their `linesLost`. */
  private readonly spawned = new Map<string, NodeProcess>();
  private readonly started: number[];
  private readonly killedAt = new Map<NodeProcess, number>();
  /**
   * The slots' and the load node's ports: chosen free up front, taken again from the system when a
   * start fails (a port free minutes ago can be another socket's now: EADDRINUSE).
   */
  private readonly ports: number[];
  private readonly httpPorts: number[];
  private readonly loadPorts: { port: number; httpPort: number; control: number };

  constructor(
    private readonly options: {
      readonly cluster: string;
      readonly ports: readonly number[];
      readonly httpPorts: readonly number[];
      readonly loadPorts: { readonly port: number; readonly httpPort: number; readonly control: number };
      readonly secret: string;
      /** Given to every process's environment (the remember store's settings). */
      readonly env?: Readonly<Record<string, string>>;
      /**
       * Run the CLI from its TypeScript sources under tsx instead of the built bundle: a node then
       * starts on ~3× the CPU (issue 29: in a rolling restart on 2 cores, that CPU is taken from
       * the other nodes exactly while they hand their partitions to it).
       */
      readonly fromSource?: boolean;
    },
  ) {
    this.ports = [...options.ports];
    this.httpPorts = [...options.httpPorts];
    this.loadPorts = { ...options.loadPorts };
    this.nodes = options.ports.map(() => undefined);
    this.procs = options.ports.map(() => '');
    this.started = options.ports.map(() => 0);
  }

  address(slot: number): string {
    return `127.0.0.1:${this.ports[slot]}`;
  }

  running(): number[] {
    return this.nodes.flatMap((n, slot) => (n?.running ? [slot] : []));
  }

  /**
   * The seeds a new process is told: the running hosting nodes when there are any (a restarted
   * first seed would otherwise form a cluster of its own), else every slot, the first forming it.
   */
  private seeds(): string {
    const running = this.running();
    const ports = running.length > 0 ? running.map((s) => this.ports[s]!) : this.ports;
    return ports.map((p) => `127.0.0.1:${p}`).join(',');
  }

  private spawn(
    proc: string,
    port: number,
    httpPort: number,
    roles: string | undefined,
    env: Record<string, string>,
  ) {
    // node refuses --cpu-prof in NODE_OPTIONS: it goes before the CLI's own arguments
    const profileDir = roles !== undefined || CPU_PROF_LOAD ? CPU_PROF_DIR : undefined;
    const profile =
      profileDir !== undefined ? ['--cpu-prof', `--cpu-prof-dir=${join(profileDir, proc)}`] : [];
    const args = (this.options.fromSource ? sourceCliArgs : builtCliArgs)([
      'node',
      ...['--cluster', this.options.cluster, '--host', '127.0.0.1', '--port', String(port)],
      ...['--http-port', String(httpPort), '--http-host', '127.0.0.1'],
      ...['--seeds', this.seeds(), '--app', APP],
      ...(roles ? ['--roles', roles] : []),
    ]);
    const owned = NodeProcess.spawn({
      args: [...profile, ...NODE_FLAGS, ...args],
      env: { DOYEN_SECRET: this.options.secret, DOYEN_LOG_LEVEL: LOG_LEVEL, ...this.options.env, ...env },
      http: { host: '127.0.0.1', port: httpPort },
      keepLogs: false,
      onLine: ({ json, text }) => {
        // per-entity lines would be gigabytes at 50k entities: those stay out of the files, or go
        // to their own (SHARDING_BENCH_LOG_ENTITIES=1: the evidence of an overlap the run reports)
        if (LOG_DIR) {
          if (!ENTITY_LINE.test(text)) appendFileSync(join(LOG_DIR, `${proc}.log`), `${text}\n`);
          else if (LOG_ENTITIES) appendFileSync(join(LOG_DIR, `${proc}.entities.log`), `${text}\n`);
        }
        if (json) this.onLine(proc, json);
        else if (text.trim()) process.stderr.write(`[${proc}] ${text}\n`);
      },
    });
    this.startedAt.set(proc, Date.now());
    this.spawned.set(proc, owned);
    void owned.exited.then(() => {
      const killed = this.killedAt.get(owned);
      this.fates.push(
        killed !== undefined
          ? { node: proc, kind: 'killed', t: killed }
          : { node: proc, kind: 'exited', t: owned.exitedAt ?? Date.now() },
      );
    });
    return owned;
  }

  private onLine(proc: string, json: Record<string, any>): void {
    // a partition's stops come as one line: one per entity here, as the checker reads them
    const lines = perEntityLines(json);
    if (lines[0] !== json) {
      for (const one of lines) this.onLine(proc, one);
      return;
    }
    const event = json.event;
    if (COUNTED.has(event)) this.eventCounts.set(event, (this.eventCounts.get(event) ?? 0) + 1);
    if (event === 'bench.gc') this.gcPauses.push({ proc, at: json.at, ms: json.ms });
    if (event === 'bench.stall') this.stalls.push({ proc, at: json.at, ms: json.ms, cpuMs: json.cpuMs });
    if (typeof json.pid === 'number' && !this.procOfPid.has(json.pid)) this.procOfPid.set(json.pid, proc);
    if (event === 'sharding.activated' || event === 'sharding.passivated') {
      // the testkit's checker speaks of singletons: an entity id is one here
      const started = event === 'sharding.activated';
      this.entityLines.push({
        node: proc,
        entityId: json.entityId,
        line: {
          event: started ? 'singleton.started' : 'singleton.stopped',
          singleton: json.entityId,
          time: json.time,
        },
      });
    } else if (event === 'sharding.partitions-activated' && Array.isArray(json.partitions)) {
      // one line per keeper step (the per-partition lines are at debug)
      for (const partition of json.partitions)
        if (typeof partition === 'number') this.partitionActivations.push({ proc, partition, t: json.time });
    } else if (typeof json.level === 'number' && json.level >= 50) {
      process.stderr.write(`[${proc}] ${json.event ?? ''} ${json.msg ?? ''}\n`);
    }
  }

  /**
   * Starts a hosting node in `slot`, again (up to `attempts`) when a start fails (on a loaded
   * machine a join can time out: `node.join-failed`); resolves once one logged `node.started`.
   */
  async start(slot: number, timeoutMs = 60_000, attempts = 3): Promise<NodeProcess> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.startOnce(slot, timeoutMs);
      } catch (error) {
        if (attempt >= attempts) throw error;
        process.stderr.write(
          `${error instanceof Error ? error.message : String(error)}: starting it again on fresh ports\n`,
        );
        await this.kill(slot);
        [this.ports[slot], this.httpPorts[slot]] = (await freePorts(2)) as [number, number];
      }
    }
  }

  private async startOnce(slot: number, timeoutMs: number): Promise<NodeProcess> {
    if (this.nodes[slot]?.running) throw new Error(`slot n${slot} still runs ${this.procs[slot]}`);
    const proc = `n${slot}.p${++this.started[slot]!}`;
    const node = this.spawn(proc, this.ports[slot]!, this.httpPorts[slot]!, SHARD_ROLE, {});
    this.nodes[slot] = node;
    this.procs[slot] = proc;
    if (!(await node.waitForLine((l) => l.json?.event === 'node.started', timeoutMs)))
      throw new Error(`${proc} did not log node.started within ${timeoutMs} ms`);
    return node;
  }

  /** Starts the load generator's node (proxy-only) and waits for its control port; on fresh ports again when it fails. */
  async startLoad(timeoutMs = 60_000, attempts = 3): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const { port, httpPort, control } = this.loadPorts;
      this.load = this.spawn('load', port, httpPort, undefined, { [LOAD_PORT_ENV]: String(control) });
      if (await this.load.waitForLine((l) => l.json?.event === 'node.started', timeoutMs)) return;
      const error = `the load node did not log node.started within ${timeoutMs} ms`;
      if (attempt >= attempts) throw new Error(error);
      process.stderr.write(`${error}: starting it again on fresh ports\n`);
      if (this.load.running) {
        this.load.kill9();
        await this.load.exited;
      }
      const [fresh, freshHttp, freshControl] = (await freePorts(3)) as [number, number, number];
      Object.assign(this.loadPorts, { port: fresh, httpPort: freshHttp, control: freshControl });
    }
  }

  /** kill -9 of the slot's process; resolves with the kill time once it has exited. */
  async kill(slot: number): Promise<number> {
    const node = this.nodes[slot];
    if (!node?.running) return Date.now();
    const t = node.kill9();
    this.killedAt.set(node, t);
    await node.exited;
    return t;
  }

  /** SIGTERM (graceful leave: partitions handed off), kill -9 after `graceMs`. */
  async stop(slot: number, graceMs = 30_000): Promise<void> {
    const node = this.nodes[slot];
    if (!node?.running) return;
    const timer = setTimeout(() => this.killedAt.set(node, Date.now()), graceMs);
    await node.stop(graceMs);
    clearTimeout(timer);
  }

  async killAll(): Promise<void> {
    // a CPU profile is written when a process exits, not when it is killed: a graceful stop first
    if (CPU_PROF_DIR !== undefined) {
      await Promise.all(this.nodes.map((_, slot) => this.stop(slot, 15_000)));
      if (this.load?.running) await this.load.stop(15_000);
    }
    await Promise.all(this.nodes.map((_, slot) => this.kill(slot)));
    if (this.load?.running) {
      this.load.kill9();
      await this.load.exited;
    }
  }

  /**
   * Log lines that never reached the bench, per process that lost any (numbers skipped in their
   * `logSeq`): an entity whose stop line is among them reads as still active, so a run reports
   * these beside its overlaps.
   */
  linesLost(): Record<string, number> {
    const lost: Record<string, number> = {};
    for (const [proc, p] of this.spawned) if (p.linesLost > 0) lost[proc] = p.linesLost;
    return lost;
  }

  /** A slot's GET /cluster/shards, or undefined. */
  shards(slot: number): Promise<ShardsView | undefined> {
    return this.nodes[slot]?.running
      ? this.nodes[slot]!.getJson<ShardsView>('/cluster/shards')
      : Promise.resolve(undefined);
  }

  /** The running slots' members as one node sees them (GET /cluster), oldest first. */
  async membersByAge(slot: number): Promise<{ address: string; age: number; roles: readonly string[] }[]> {
    const view = await this.nodes[slot]?.getJson<{
      members: { address: string; age: number; status: string; roles: string[] }[];
    }>('/cluster');
    return (view?.members ?? []).filter((m) => m.status === 'up').sort((a, b) => a.age - b.age);
  }

  /** `host:port` of the owner per partition, as `slot` sees the table. */
  async owners(slot: number): Promise<{ version: number; owners: string[] } | undefined> {
    return this.nodes[slot]?.getJson<{ version: number; owners: string[] }>('/partitions');
  }

  slotOf(address: string): number {
    return this.ports.findIndex((p) => `127.0.0.1:${p}` === address);
  }

  /** POST to the load generator's control port. */
  async control<T>(path: string, body: unknown = {}, timeoutMs = 600_000): Promise<T> {
    const res = await fetch(`http://127.0.0.1:${this.loadPorts.control}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const json = (await res.json()) as T & { error?: string };
    if (!res.ok) throw new Error(`load ${path}: ${json.error ?? res.status}`);
    return json;
  }
}
