// Node processes of the benches that run one doyen node per child process (membership, singleton): the
// spawn, the IPC conversation, and the guarantee that none outlives the bench (SIGKILL on exit, whatever the
// exit path). Each bench's NodeProcess adds what its own reports carry.
import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';
import { once } from 'node:events';
import { waitFor, withTimeout } from './timeout.js';

const live = new Set<ChildProcess>();
let exitHookInstalled = false;

/** Last resort: whatever way the bench exits, no node process is left behind. */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const child of live) child.kill('SIGKILL');
  });
}

/** SIGINT / SIGTERM exit through process.exit, so the exit hook above still kills the node processes. */
export function installSignalCleanup(): void {
  installExitHook();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      process.stderr.write(`${signal}: stopping ${live.size} node process(es)\n`);
      process.exit(130);
    });
  }
}

/**
 * Spawns a process that must not outlive the bench (the compiled CLI, say): tracked like the node
 * processes above, killed on any exit.
 */
export function spawnTracked(command: string, args: readonly string[], options: SpawnOptions): ChildProcess {
  installExitHook();
  const child = spawn(command, args, options);
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

/** Node processes still running (for the report: 0 after cleanup). */
export function liveProcesses(): number {
  return live.size;
}

/**
 * Starts `script` (a node process of a bench) on 127.0.0.1:`port` joining through `seeds`. stdout is the
 * bench's table and JSON line: what a node prints goes to stderr, prefixed, unless `swallow(line)` takes it.
 */
export function spawnNodeProcess(
  script: string,
  port: number,
  seeds: readonly string[],
  extraArgs: readonly string[] = [],
  swallow: (line: string) => boolean = () => false,
): ChildProcess {
  installExitHook();
  // Absolute loader URL, so the child does not depend on the caller's working directory.
  const tsx = import.meta.resolve('tsx');
  const child = spawn(
    process.execPath,
    [
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
    { stdio: ['ignore', 'pipe', 'pipe', 'ipc'] },
  );
  live.add(child);
  const prefix = `[node :${port}] `;
  for (const stream of [child.stdout, child.stderr]) {
    stream?.setEncoding('utf8');
    let rest = '';
    stream?.on('data', (chunk: string) => {
      const lines = (rest + chunk).split('\n');
      rest = lines.pop()!;
      for (const line of lines)
        if (line.length > 0 && !swallow(line)) process.stderr.write(`${prefix}${line}\n`);
    });
  }
  return child;
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
  Up,
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
    protected readonly child: ChildProcess,
  ) {
    this.exited = once(child, 'exit').then(() => {
      live.delete(child);
    });
    child.on('message', (report: BaseReport<Up, State> | Report) => {
      if (report.kind === 'up') this.up = report as Up;
      else if (report.kind === 'state') {
        this.onState(report as unknown as State);
        this.pending.get((report as unknown as State).id)?.(report as unknown as State);
      } else if (report.kind === 'failed') this.failure = (report as { message: string }).message;
      else this.onReport(report as Report);
    });
    child.on('error', (error) => (this.failure ??= error.message));
  }

  /** A report of the bench's own kinds. */
  protected abstract onReport(report: Report): void;

  /** Every state answer, before it goes to whoever asked. */
  protected onState(_state: State): void {}

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get isRunning(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  async whenUp(timeoutMs: number): Promise<Up> {
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
  state(timeoutMs: number): Promise<State> {
    const id = this.nextId++;
    const answer = new Promise<State>((resolve) => this.pending.set(id, resolve));
    this.send({ cmd: 'state', id } as Command);
    return withTimeout(answer, timeoutMs, `state of ${this.address}`).finally(() => this.pending.delete(id));
  }

  send(command: Command): void {
    if (this.isRunning && this.child.connected) this.child.send(command as object);
  }

  /** SIGKILL: a crash. Returns the wall-clock time just before the signal. */
  kill9(): number {
    const t = performance.timeOrigin + performance.now();
    this.child.kill('SIGKILL');
    return t;
  }

  /** SIGTERM (the node closes without leaving), SIGKILL if it has not exited within `graceMs`. */
  async stop(graceMs = 3_000): Promise<void> {
    if (!this.isRunning) return this.exited;
    this.child.kill('SIGTERM');
    try {
      await withTimeout(this.exited, graceMs, `stopping node ${this.address}`);
    } catch {
      this.child.kill('SIGKILL');
      await withTimeout(this.exited, graceMs, `killing node ${this.address}`);
    }
  }
}
