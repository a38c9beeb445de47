// Node processes of the benches that run one doyen node per child process (membership, singleton): the
// spawn (the testkit's NodeProcess, so none outlives the bench) and the IPC conversation. Each bench's
// NodeProcess adds what its own reports carry.
import { memberKey } from '../../packages/cluster/src/index.js';
import {
  installSignalCleanup,
  liveNodeProcesses,
  NodeProcess as OwnedProcess,
} from '../../packages/testkit/src/node-process.js';
import type { MembershipFigures } from './node-reports.js';
import { waitFor, withTimeout } from './timeout.js';

export { installSignalCleanup, OwnedProcess };

/** Processes still running (for the report: 0 after cleanup). */
export const liveProcesses = liveNodeProcesses;

/**
 * Starts `script` (a node process of a bench, TypeScript through tsx) on 127.0.0.1:`port` joining
 * through `seeds`, with an IPC channel. stdout is the bench's table and JSON line: what a node prints
 * goes to stderr, prefixed, unless `swallow(line)` takes it.
 */
export function spawnNodeProcess(
  script: string,
  port: number,
  seeds: readonly string[],
  extraArgs: readonly string[] = [],
  swallow: (line: string) => boolean = () => false,
): OwnedProcess {
  // Absolute loader URL, so the child does not depend on the caller's working directory.
  const tsx = import.meta.resolve('tsx');
  const prefix = `[node :${port}] `;
  return OwnedProcess.spawn({
    args: [
      '--conditions=@doyen/source',
      '--import',
      tsx,
      script,
      '--port',
      String(port),
      '--seeds',
      seeds.join(','),
      ...extraArgs,
    ],
    ipc: true,
    keepLogs: false,
    onLine: ({ text }) => {
      if (!swallow(text)) process.stderr.write(`${prefix}${text}\n`);
    },
  });
}

/** What every node process reports; a bench's own reports come on top. */
export type BaseReport<Up, State> =
  | (Up & { readonly kind: 'up' })
  | (State & { readonly kind: 'state'; readonly id: number })
  | { readonly kind: 'failed'; readonly message: string };

/**
 * The parent's handle on one node process: up, state asks over IPC, crash, stop. `onReport` gets every
 * report that is not one of the base ones.
 */
export abstract class NodeProcessBase<
  Up extends { readonly address: string; readonly uid: string },
  State extends { readonly id: number },
  Report extends { readonly kind: string },
  Command,
> {
  readonly exited: Promise<void>;
  up: Up | undefined;
  protected failure: string | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, (s: State) => void>();

  protected constructor(
    readonly port: number,
    protected readonly owned: OwnedProcess,
    /** How long `whenUp()` and `state()` wait unless told otherwise. */
    private readonly timeouts: { readonly upMs: number; readonly stateMs: number },
  ) {
    this.exited = owned.exited.then(() => {});
    owned.process.on('message', (report: BaseReport<Up, State> | Report) => {
      if (report.kind === 'up') this.up = report as Up;
      else if (report.kind === 'state') {
        this.onState(report as unknown as State);
        this.pending.get((report as unknown as State).id)?.(report as unknown as State);
      } else if (report.kind === 'failed') this.failure = (report as { message: string }).message;
      else this.onReport(report as Report);
    });
    owned.process.on('error', (error) => (this.failure ??= error.message));
  }

  /** A report of the bench's own kinds. */
  protected abstract onReport(report: Report): void;

  /** Every state answer, before it goes to whoever asked. */
  protected onState(_state: State): void {}

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** The member key of the incarnation that reported up. */
  get key(): string {
    if (!this.up) throw new Error(`node ${this.address} is not up`);
    return memberKey(this.up);
  }

  get pid(): number | undefined {
    return this.owned.pid;
  }

  get isRunning(): boolean {
    return this.owned.running;
  }

  async whenUp(timeoutMs = this.timeouts.upMs): Promise<Up> {
    await waitFor(
      () => {
        if (this.failure) throw new Error(`node ${this.address} failed: ${this.failure}`);
        if (!this.isRunning) throw new Error(`node ${this.address} exited before it was up`);
        return this.up !== undefined;
      },
      timeoutMs,
      `node ${this.address} up`,
      10,
    );
    return this.up!;
  }

  /** The node's view, asked over IPC. */
  state(timeoutMs = this.timeouts.stateMs): Promise<State> {
    const id = this.nextId++;
    const answer = new Promise<State>((resolve) => this.pending.set(id, resolve));
    this.send({ cmd: 'state', id } as Command);
    return withTimeout(answer, timeoutMs, `state of ${this.address}`).finally(() => this.pending.delete(id));
  }

  send(command: Command): void {
    if (this.isRunning && this.owned.process.connected) this.owned.process.send(command as object);
  }

  /** SIGKILL: a crash. Returns the wall-clock time just before the signal. */
  kill9(): number {
    return this.owned.kill9();
  }

  /** SIGTERM (the node closes without leaving), SIGKILL if it has not exited within `graceMs`. */
  async stop(graceMs = 3_000): Promise<void> {
    await this.owned.stop(graceMs);
  }
}

/**
 * Starts a node process per port into `nodes` (the caller's list, so that its close reaches every one started
 * when a later one fails): the first port's node, every node's seed, is up before the others start; resolves
 * once every one is up (the others within `upTimeoutMs`, default their own).
 */
export async function startNodeProcesses<P extends { whenUp(timeoutMs?: number): Promise<unknown> }>(
  nodes: P[],
  ports: readonly number[],
  spawn: (port: number, seeds: readonly string[]) => P,
  upTimeoutMs?: number,
): Promise<void> {
  const seed = `127.0.0.1:${ports[0]}`;
  nodes.push(spawn(ports[0]!, [seed]));
  await nodes[0]!.whenUp();
  for (const port of ports.slice(1)) nodes.push(spawn(port, [seed]));
  await Promise.all(nodes.map((node) => node.whenUp(upTimeoutMs)));
}

/** Every state sees exactly the members `keys`, all up, at the first state's version, none unreachable. */
export function allUpAtOneVersion(states: readonly MembershipFigures[], keys: ReadonlySet<string>): boolean {
  return states.every(
    (s) =>
      s.status === 'up' &&
      s.version === states[0]!.version &&
      s.unreachable.length === 0 &&
      s.members.length === keys.size &&
      s.members.every((m) => m.status === 'up' && keys.has(memberKey(m))),
  );
}

/** Runs `start` for `cluster` and resolves to it; closes it (every process started so far) when `start` throws. */
export async function startedOrClosed<C extends { close(): Promise<void> }>(
  cluster: C,
  start: () => Promise<void>,
): Promise<C> {
  try {
    await start();
    return cluster;
  } catch (error) {
    await cluster.close();
    throw error;
  }
}
