// The whole cluster's CPU right after an incident (issue 30): at 50 nodes on 2 cores every stage of
// a kill's or a leave's way to the console's screen waits for a core behind the node processes
// reacting to the same event, so the console bench sums their CPU (utime + stime of all threads,
// /proc/PID/stat, 10 ms ticks) over the second after it, and counts the wire messages each node
// sent meanwhile (its /metrics), with the console open and without (`--no-console`).
import { readFileSync } from 'node:fs';
import type { CliNode } from './lib/cli-nodes.js';
import { median } from './lib/stats.js';

const TICK_MS = 10;

/** utime + stime of `pid` so far (ms), or undefined once it is gone. */
function cpuMsOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch {
    return undefined;
  }
}

export interface ClusterCpu {
  /** Wall time of the window (ms). */
  readonly windowMs: number;
  /** CPU ms of all the live nodes together over the window (2 cores: at most 2 × windowMs). */
  readonly totalMs: number;
  readonly servingMs: number;
  /** The other nodes: median and largest CPU ms each. */
  readonly memberMedianMs: number;
  readonly memberMaxMs: number;
}

/** Starts the window now (call it right before the incident); resolves `ms` later with the sums. */
export function clusterCpuWindow(
  nodes: readonly { pid: number; serving: boolean }[],
  ms = 1000,
): Promise<ClusterCpu> {
  const t0 = Date.now();
  const before = nodes.map((n) => cpuMsOf(n.pid));
  return new Promise((resolve) => {
    setTimeout(() => {
      const windowMs = Date.now() - t0;
      let servingMs = 0;
      const members: number[] = [];
      nodes.forEach((n, i) => {
        const a = before[i];
        const b = cpuMsOf(n.pid);
        if (a === undefined || b === undefined) return;
        if (n.serving) servingMs += b - a;
        else members.push(b - a);
      });
      resolve({
        windowMs,
        totalMs: servingMs + members.reduce((s, x) => s + x, 0),
        servingMs,
        memberMedianMs: members.length > 0 ? median(members) : 0,
        memberMaxMs: members.length > 0 ? Math.max(...members) : 0,
      });
    }, ms);
  });
}

/** Wire messages a node has sent so far, by lane (its /metrics), or undefined when it does not answer. */
async function messagesSent(node: CliNode): Promise<Record<string, number> | undefined> {
  try {
    const r = await fetch(`http://127.0.0.1:${node.httpPort}/metrics`, {
      headers: { host: `127.0.0.1:${node.httpPort}` },
    });
    if (!r.ok) return undefined;
    const out: Record<string, number> = {};
    for (const m of (await r.text()).matchAll(/^doyen_wire_messages_sent_total\{lane="([^"]+)"\} (\S+)$/gm))
      out[m[1]!] = Number(m[2]);
    return out;
  } catch {
    return undefined;
  }
}

/** Every node's wire messages sent so far (read one node at a time: 50 at once would be its own burst). */
export async function messagesSnapshot(
  nodes: readonly CliNode[],
): Promise<Map<CliNode, Record<string, number>>> {
  const out = new Map<CliNode, Record<string, number>>();
  for (const n of nodes) {
    const m = await messagesSent(n);
    if (m) out.set(n, m);
  }
  return out;
}

/** Messages sent between two snapshots: all nodes together by lane, and the serving node's and a member's median total. */
export function messagesBetween(
  before: Map<CliNode, Record<string, number>>,
  after: Map<CliNode, Record<string, number>>,
  serving: CliNode,
): { byLane: Record<string, number>; serving: number; memberMedian: number } {
  const byLane: Record<string, number> = {};
  const members: number[] = [];
  let servingTotal = 0;
  for (const [node, a] of after) {
    const b = before.get(node);
    if (!b) continue;
    let total = 0;
    for (const [lane, v] of Object.entries(a)) {
      const d = v - (b[lane] ?? 0);
      byLane[lane] = (byLane[lane] ?? 0) + d;
      total += d;
    }
    if (node === serving) servingTotal = total;
    else members.push(total);
  }
  return { byLane, serving: servingTotal, memberMedian: members.length > 0 ? median(members) : 0 };
}
