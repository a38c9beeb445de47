// The parent side of the membership bench's node processes: spawns membership-node.ts children, keeps every
// report they send, and makes sure none outlives the bench (SIGKILL on exit, whatever the exit path).
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import {
  keyOf,
  type NodeCommand,
  type NodeEvent,
  type NodeReport,
  type NodeState,
  type NodeUp,
  type StallDone,
} from './membership-messages.js';
import { withTimeout } from './timeout.js';

const script = fileURLToPath(new URL('./membership-node.ts', import.meta.url));
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

const warnings = new Map<string, number>();

/** A pino line at level warn: counted by its `event`, not printed. */
function countedWarning(line: string): boolean {
  try {
    const entry = JSON.parse(line) as { level?: number; event?: string };
    if (entry.level !== 40) return false;
    const key = entry.event ?? 'other';
    warnings.set(key, (warnings.get(key) ?? 0) + 1);
    return true;
  } catch {
    return false;
  }
}

/** Warnings the node processes logged so far, by event: `dead-letter ×12, …`. */
export function nodeWarnings(): string {
  return [...warnings].map(([event, n]) => `${event} ×${n}`).join(', ');
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

/** Resolves when `check()` holds, polling every `everyMs`; rejects after `timeoutMs`. */
export async function waitUntil(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
  everyMs = 5,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (performance.now() >= deadline) throw new Error(`${what}: not done after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export class NodeProcess {
  /** Every cluster event this incarnation reported, in order. */
  readonly events: NodeEvent[] = [];
  readonly exited: Promise<void>;
  up: NodeUp | undefined;
  stallDone: StallDone | undefined;
  private failure: string | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, (s: NodeState) => void>();

  private constructor(
    readonly port: number,
    private readonly child: ChildProcess,
  ) {
    this.exited = once(child, 'exit').then(() => {
      live.delete(child);
    });
    child.on('message', (report: NodeReport) => this.onReport(report));
    child.on('error', (error) => (this.failure ??= error.message));
  }

  /** Spawns a node on 127.0.0.1:`port` joining through `seeds` (`host:port` list). */
  static spawn(port: number, seeds: readonly string[], extraArgs: readonly string[] = []): NodeProcess {
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
    // Node logs (level warn) stay off stdout, which is the table and the JSON line: warnings are counted by
    // event (a kill -9 makes the survivors log a dead letter per queued heartbeat), anything else goes to stderr.
    const prefix = `[node :${port}] `;
    for (const stream of [child.stdout, child.stderr]) {
      stream?.setEncoding('utf8');
      let rest = '';
      stream?.on('data', (chunk: string) => {
        const lines = (rest + chunk).split('\n');
        rest = lines.pop()!;
        for (const line of lines)
          if (line.length > 0 && !countedWarning(line)) process.stderr.write(`${prefix}${line}\n`);
      });
    }
    return new NodeProcess(port, child);
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  get key(): string {
    if (!this.up) throw new Error(`node ${this.address} is not up`);
    return keyOf(this.up);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get isRunning(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  async whenUp(timeoutMs = 20_000): Promise<NodeUp> {
    await waitUntil(
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

  /** The node's view of the cluster, asked over IPC. */
  state(timeoutMs = 2_000): Promise<NodeState> {
    const id = this.nextId++;
    const answer = new Promise<NodeState>((resolve) => this.pending.set(id, resolve));
    this.send({ cmd: 'state', id });
    return withTimeout(answer, timeoutMs, `state of ${this.address}`).finally(() => this.pending.delete(id));
  }

  send(command: NodeCommand): void {
    if (this.isRunning && this.child.connected) this.child.send(command);
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

  private onReport(report: NodeReport): void {
    switch (report.kind) {
      case 'up':
        this.up = report;
        return;
      case 'event':
        this.events.push(report);
        return;
      case 'state':
        this.pending.get(report.id)?.(report);
        return;
      case 'stall-done':
        this.stallDone = report;
        return;
      case 'failed':
        this.failure = report.message;
        return;
    }
  }
}
