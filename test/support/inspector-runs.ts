// What the inspector tests start, all closed after each test of the file.
import { afterEach } from 'vitest';
import type { DoyenNode } from '../../packages/doyen/src/index.js';
import type { InspectorServer } from '../../packages/doyen/src/inspector/index.js';
import type { Recorder } from '../inspector/support.js';
import { type CliNode, killAll } from './cli-process.js';

export interface InspectorRuns {
  readonly children: CliNode[];
  readonly recorders: Recorder[];
  readonly nodes: DoyenNode[];
  readonly servers: InspectorServer[];
}

/**
 * Lists for a test's child processes, inspector clients, nodes and relay servers. After each test
 * they are closed in that order: whatever sends to a relay is gone before the relay stops.
 */
export function inspectorRunsClosedAfterEach(): InspectorRuns {
  const runs: InspectorRuns = { children: [], recorders: [], nodes: [], servers: [] };
  afterEach(async () => {
    killAll(runs.children.splice(0));
    await Promise.all(runs.recorders.splice(0).map((r) => r.close()));
    await Promise.all(runs.nodes.splice(0).map((n) => n.close()));
    for (const s of runs.servers.splice(0)) s.stop();
  });
  return runs;
}
