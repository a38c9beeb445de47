// The parent side of the membership bench's node processes: spawns membership-node.ts children and keeps
// every report they send (node-processes.ts makes sure none outlives the bench).

import { fileURLToPath } from 'node:url';
import type { NodeCommand, NodeEvent, NodeState, NodeUp, StallDone } from './membership-messages.js';
import {
  installSignalCleanup,
  NodeProcessBase,
  type OwnedProcess,
  spawnNodeProcess,
} from './node-processes.js';

export { installSignalCleanup };

const script = fileURLToPath(new URL('./membership-node.ts', import.meta.url));
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

export class NodeProcess extends NodeProcessBase<NodeUp, NodeState, NodeEvent | StallDone, NodeCommand> {
  /** Every cluster event this incarnation reported, in order. */
  readonly events: NodeEvent[] = [];
  stallDone: StallDone | undefined;

  private constructor(port: number, child: OwnedProcess) {
    super(port, child, { upMs: 20_000, stateMs: 2_000 });
  }

  /**
   * Spawns a node on 127.0.0.1:`port` joining through `seeds` (`host:port` list). Its warnings are counted
   * by event (a kill -9 makes the survivors log a dead letter per queued heartbeat), not printed.
   */
  static spawn(port: number, seeds: readonly string[], extraArgs: readonly string[] = []): NodeProcess {
    return new NodeProcess(port, spawnNodeProcess(script, port, seeds, extraArgs, countedWarning));
  }

  protected onReport(report: NodeEvent | StallDone): void {
    if (report.kind === 'event') this.events.push(report);
    else this.stallDone = report;
  }
}
