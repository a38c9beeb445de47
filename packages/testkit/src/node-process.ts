/**
 * One `doyen node` (or any Node.js script) as a child process that a test, a bench or the demo
 * owns: spawned with its secrets in the environment, its output split into lines (JSON log lines
 * parsed, `event` lines kept apart), readiness by log line, its management HTTP, kill -9, pause
 * and resume, a graceful stop. Nothing outlives its owner: every process spawned here is killed
 * when the owning process exits, whatever the way (`installSignalCleanup` turns SIGINT/SIGTERM
 * into such an exit).
 */
import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';

export interface ExitStatus {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface OutputLine {
  readonly stream: 'stdout' | 'stderr';
  readonly text: string;
  /** The line parsed, when it is a JSON object (a pino log line). */
  readonly json: Record<string, unknown> | undefined;
  /** Wall-clock ms when it arrived. */
  readonly at: number;
}

export interface NodeProcessOptions {
  /** The program; this Node.js when absent (`args` then start with the script, e.g. doyen's `dist/cli.js`). */
  readonly command?: string;
  readonly args: readonly string[];
  /** Added to the inherited environment (`undefined` removes a variable). Secrets go here, never in `args`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly cwd?: string;
  /** Where its management HTTP answers, for `getJson`. */
  readonly http?: { readonly host: string; readonly port: number };
  /** Its own process group: a Ctrl-C in the owner's terminal does not reach it. */
  readonly detached?: boolean;
  /** `pipe` keeps stdin open (a guard in the child can end it when the pipe closes). */
  readonly stdin?: 'ignore' | 'pipe';
  /** An IPC channel (`process.send` in the child). */
  readonly ipc?: boolean;
  /** Keep every line in `logs` (default); off for long runs that only listen. */
  readonly keepLogs?: boolean;
  /** Every output line, as it arrives. */
  readonly onLine?: (line: OutputLine) => void;
}

/**
 * The number doyen's node logger gives each line of a process (packages/doyen/src/node-logger.ts
 * LOG_SEQ_FIELD): a number skipped is a line lost between the process and this reader.
 */
export const LOG_SEQ_FIELD = 'logSeq';

const live = new Set<NodeProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const p of live) p.kill9();
  });
}

/** SIGINT / SIGTERM end the owner through `process.exit`, so the exit hook still kills every child. */
export function installSignalCleanup(): void {
  installExitHook();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      process.stderr.write(`${signal}: stopping ${live.size} node process(es)\n`);
      process.exit(130);
    });
  }
}

/** Processes spawned here that have not exited yet. */
export function liveNodeProcesses(): number {
  return live.size;
}

/** kill -9 of every process spawned here that still runs (for an owner's own shutdown path). */
export function killAllNodeProcesses(): void {
  for (const p of live) p.kill9();
}

export class NodeProcess {
  readonly process: ChildProcess;
  /** Every stdout/stderr line (unless `keepLogs: false`). */
  readonly logs: string[] = [];
  /** Resolves once the process has exited and its output is read to the end. */
  readonly exited: Promise<ExitStatus>;
  /** Wall-clock ms of the exit (the process's, before its output is read to the end). */
  exitedAt: number | undefined;
  private status: ExitStatus | undefined;
  private lastLogSeq = 0;
  private skippedLogLines = 0;
  private readonly eventLines: Record<string, any>[] = [];
  private readonly listeners = new Set<(line: OutputLine) => void>();

  private constructor(private readonly options: NodeProcessOptions) {
    installExitHook();
    const stdio: SpawnOptions['stdio'] = [options.stdin ?? 'ignore', 'pipe', 'pipe'];
    if (options.ipc) stdio.push('ipc');
    this.process = spawn(options.command ?? process.execPath, [...options.args], {
      cwd: options.cwd,
      stdio,
      detached: options.detached ?? false,
      env: { ...process.env, ...options.env },
    });
    live.add(this);
    if (options.onLine) this.listeners.add(options.onLine);
    this.read('stdout');
    this.read('stderr');
    this.process.stdin?.on('error', () => {});
    this.process.once('exit', () => {
      this.exitedAt = Date.now();
    });
    // 'close' (not 'exit'): every line is read once it fires; a spawn error closes too
    this.exited = new Promise((resolve) => {
      this.process.once('close', (code, signal) => {
        live.delete(this);
        this.exitedAt ??= Date.now();
        this.status = { code, signal };
        resolve(this.status);
      });
    });
    this.process.once('error', () => {});
  }

  /** Starts a process; see NodeProcessOptions. */
  static spawn(options: NodeProcessOptions): NodeProcess {
    return new NodeProcess(options);
  }

  get pid(): number | undefined {
    return this.process.pid;
  }

  /** True until the process has exited. */
  get running(): boolean {
    return this.process.exitCode === null && this.process.signalCode === null && this.status === undefined;
  }

  /** The exit status once it has exited. */
  exitStatus(): ExitStatus | undefined {
    return this.status;
  }

  /**
   * Log lines that never arrived: the numbers (`logSeq`) skipped between the lines that did. A
   * witness reading these logs reports it beside its verdict, so a lost line is neither taken
   * for a fact (a stop never logged) nor missed. Lines cut off by a kill -9 are not counted.
   */
  get linesLost(): number {
    return this.skippedLogLines;
  }

  /** The JSON log lines with an `event` field, in order. */
  events(): Record<string, any>[] {
    return this.eventLines;
  }

  /** Calls `listener` for every line from now on; returns the way to stop. */
  onLine(listener: (line: OutputLine) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Resolves with the first line from now on that passes `test`; undefined after `timeoutMs` or at exit. */
  waitForLine(test: (line: OutputLine) => boolean, timeoutMs: number): Promise<OutputLine | undefined> {
    return new Promise((resolve) => {
      const done = (line: OutputLine | undefined) => {
        clearTimeout(timer);
        stop();
        resolve(line);
      };
      const stop = this.onLine((line) => test(line) && done(line));
      const timer = setTimeout(() => done(undefined), timeoutMs);
      void this.exited.then(() => done(undefined));
    });
  }

  /** The first (past or future) log line with this `event`; undefined after `timeoutMs` or at exit. */
  async waitForEvent(event: string, timeoutMs: number): Promise<Record<string, any> | undefined> {
    const seen = this.eventLines.find((e) => e.event === event);
    if (seen) return seen;
    return (await this.waitForLine((l) => l.json?.event === event, timeoutMs))?.json;
  }

  /** GET `path` from its management HTTP; undefined when it does not answer, answers non-2xx or not JSON. */
  async getJson<T = unknown>(path: string, timeoutMs = 2000): Promise<T | undefined> {
    const http = this.options.http;
    if (!http) throw new Error('getJson: this process was started without an http address');
    const host = http.host.includes(':') ? `[${http.host}]` : http.host;
    try {
      const res = await fetch(`http://${host}:${http.port}${path}`, {
        signal: AbortSignal.timeout(timeoutMs),
      });
      return res.ok ? ((await res.json()) as T) : undefined;
    } catch {
      return undefined;
    }
  }

  /** Sends `signal` if it still runs. */
  signal(signal: NodeJS.Signals): void {
    if (!this.running) return;
    try {
      this.process.kill(signal);
    } catch {
      // gone between the check and the signal
    }
  }

  /** kill -9 (a crash, as its peers see it); resumes a paused process first. Returns the wall-clock ms just before. */
  kill9(): number {
    const at = performance.timeOrigin + performance.now();
    this.signal('SIGCONT');
    this.signal('SIGKILL');
    return at;
  }

  /** SIGSTOP: frozen (no heartbeats, no HTTP) until `resume`. */
  pause(): void {
    this.signal('SIGSTOP');
  }

  resume(): void {
    this.signal('SIGCONT');
  }

  /** SIGTERM (`doyen node` leaves the cluster and exits), kill -9 if still running after `graceMs`. */
  async stop(graceMs = 10_000): Promise<ExitStatus> {
    if (!this.running) return this.exited;
    this.resume();
    this.signal('SIGTERM');
    const timer = setTimeout(() => this.kill9(), graceMs);
    const status = await this.exited;
    clearTimeout(timer);
    return status;
  }

  private read(stream: 'stdout' | 'stderr'): void {
    const source = this.process[stream];
    if (!source) return;
    source.setEncoding('utf8');
    let rest = '';
    const take = (text: string) => {
      if (!text) return;
      let json: Record<string, unknown> | undefined;
      if (text.startsWith('{')) {
        try {
          json = JSON.parse(text) as Record<string, unknown>;
        } catch {
          json = undefined;
        }
      }
      const seq = json?.[LOG_SEQ_FIELD];
      if (stream === 'stdout' && typeof seq === 'number' && seq > this.lastLogSeq) {
        this.skippedLogLines += seq - this.lastLogSeq - 1;
        this.lastLogSeq = seq;
      }
      if (this.options.keepLogs !== false) {
        this.logs.push(text);
        if (typeof json?.event === 'string') this.eventLines.push(json);
      }
      const line: OutputLine = { stream, text, json, at: Date.now() };
      for (const listener of [...this.listeners]) listener(line);
    };
    source.on('data', (chunk: string) => {
      const parts = (rest + chunk).split('\n');
      rest = parts.pop() ?? '';
      for (const part of parts) take(part);
    });
    source.on('end', () => {
      take(rest);
      rest = '';
    });
  }
}
