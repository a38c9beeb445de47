// The child side of a bench node process (membership-node.ts, singleton-node.ts): reports go to the parent
// over IPC, and the process never outlives the parent. Import it before anything slow: the orphan handling
// must be in place while the heavy imports still load (node-reports.ts imports only types of the packages).
import { type NodeFailed, type NodeUp, wallMs } from './node-reports.js';

/** How a node process talks to its parent and ends. */
export interface NodeProcessChild<Report> {
  /** Sends a report to the parent (dropped once the channel is gone). */
  readonly report: (message: Report | NodeUp | NodeFailed) => void;
  /** Reports that the node failed, with `error`'s message, and exits 1. */
  readonly fail: (error: unknown) => void;
  /** Waits until `cluster` is up and reports `up` (its address and uid, now); `fail`s when it never is. */
  readonly reportUp: (cluster: {
    whenUp(): Promise<unknown>;
    readonly self: { readonly address: string; readonly uid: string };
  }) => Promise<void>;
  /** Closes the node (see `closeWith`) and exits with `code`; SIGKILL if that hangs for 2 s. */
  readonly exit: (code: number) => void;
  /**
   * Starts an exit of the caller's own (e.g. a graceful leave): arms a SIGKILL after `graceMs` in case it
   * hangs; false when an exit is already under way.
   */
  readonly beginExit: (graceMs: number) => boolean;
  /** Ends at once: the parent is gone. */
  readonly orphaned: () => void;
  /** What `exit` closes first (the node, once started). */
  closeWith(close: () => Promise<void>): void;
}

export function nodeProcessChild<Report>(name: string): NodeProcessChild<Report> {
  if (!process.send) {
    console.error(`${name} reports over IPC: spawn it with an ipc stdio channel`);
    process.exit(2);
  }
  let close: () => Promise<void> = () => Promise.resolve();
  let exiting = false;
  const beginExit = (graceMs: number) => {
    if (exiting) return false;
    exiting = true;
    // Whatever hangs on the way out (a close, a log flush into a dead pipe), the process goes.
    setTimeout(() => process.kill(process.pid, 'SIGKILL'), graceMs);
    return true;
  };
  const exit = (code: number) => {
    if (beginExit(2_000)) void close().finally(() => process.exit(code));
  };
  // Never outlive the parent: the IPC channel closes when it exits, however it exits. Then this process ends at
  // once with SIGKILL (the kernel closes its sockets): process.exit() can deadlock on Node 20 while an import is
  // still going through the tsx loader thread, and nobody is left to see a graceful close anyway. A re-parented
  // process (the channel closed unnoticed) ends too.
  const orphaned = () => process.kill(process.pid, 'SIGKILL');
  process.on('disconnect', orphaned);
  process.on('SIGTERM', () => exit(0));
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent || !process.connected) orphaned();
  }, 500).unref();
  const report = (message: Report | NodeUp | NodeFailed) => {
    if (process.connected) process.send?.(message);
  };
  const fail = (error: unknown) => {
    report({ kind: 'failed', message: (error as Error).message });
    exit(1);
  };
  return {
    report,
    fail,
    reportUp: async (cluster) => {
      try {
        await cluster.whenUp();
        report({ kind: 'up', address: cluster.self.address, uid: cluster.self.uid, t: wallMs() });
      } catch (error) {
        fail(error);
      }
    },
    exit,
    beginExit,
    orphaned,
    closeWith: (fn) => {
      close = fn;
    },
  };
}
