// What a node spends its CPU on right after an incident (issue 30, `pnpm bench console
// --profile`): a few nodes start with the inspector on a loopback port (NODE_OPTIONS --inspect),
// and the bench drives V8's sampling profiler over the DevTools protocol around the kill and the
// leave only, not the node's start. The profile is summed per function (self time, and total time
// of a few console and cluster entry points) so the report can say where the burst goes.
import WebSocket from 'ws';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
}

/** A running profile of one process, over its inspector's WebSocket. */
export interface Profiling {
  stop(): Promise<ProfileSummary | undefined>;
}

export interface ProfileSummary {
  readonly sampledMs: number;
  /** Of the sampled time, ms not idle (program, GC and JavaScript). */
  readonly busyMs: number;
  /** The heaviest functions by self time (ms). */
  readonly selfTop: { fn: string; ms: number }[];
  /** Total (inclusive) ms under functions whose name matches one of TOTALS. */
  readonly totals: Record<string, number>;
}

/**
 * Functions whose inclusive time is worth a line, by name only (the CLI is one bundle): `flush`
 * is the console publisher's and the wire association's, `receive` the gatherer's and others.
 */
const TOTALS: Record<string, RegExp> = {
  'build() (OwnView)': /^build$/,
  'flush() (console publisher, wire)': /^flush$/,
  diffView: /^diffView$/,
  'observe() (MachineTracker)': /^observe$/,
  '*encode*': /encode/i,
  '*decode* / unpack': /decode|unpack/i,
  '(garbage collector)': /^\(garbage collector\)$/,
};

/** Connects to the inspector at `port` and starts sampling (1 ms); undefined when it does not answer. */
export async function startProfiling(port: number): Promise<Profiling | undefined> {
  let url: string | undefined;
  try {
    const list = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as {
      webSocketDebuggerUrl: string;
    }[];
    url = list[0]?.webSocketDebuggerUrl;
  } catch {
    return undefined;
  }
  if (!url) return undefined;
  const ws = new WebSocket(url);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  let id = 0;
  const pending = new Map<number, (result: unknown) => void>();
  ws.on('message', (data) => {
    const m = JSON.parse(String(data)) as { id?: number; result?: unknown };
    if (m.id !== undefined) pending.get(m.id)?.(m.result);
  });
  const call = (method: string, params: Record<string, unknown> = {}) =>
    new Promise<unknown>((resolve) => {
      const n = ++id;
      pending.set(n, resolve);
      ws.send(JSON.stringify({ id: n, method, params }));
    });
  await call('Profiler.enable');
  await call('Profiler.setSamplingInterval', { interval: 1000 });
  await call('Profiler.start');
  return {
    async stop() {
      const result = (await call('Profiler.stop')) as { profile?: Profile } | undefined;
      ws.close();
      return result?.profile ? summarise(result.profile) : undefined;
    },
  };
}

function summarise(profile: Profile): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const samples = profile.samples?.length ?? 0;
  const sampledMs = (profile.endTime - profile.startTime) / 1000;
  const msPerHit = samples > 0 ? sampledMs / samples : 1;
  const name = (n: ProfileNode) => n.callFrame.functionName || '(anonymous)';
  const self = new Map<string, number>();
  let idle = 0;
  for (const n of profile.nodes) {
    const hits = n.hitCount ?? 0;
    if (name(n) === '(idle)') idle += hits;
    const where = n.callFrame.url
      ? `${name(n)} ${n.callFrame.url.split('/').at(-1)}:${n.callFrame.lineNumber + 1}`
      : name(n);
    self.set(where, (self.get(where) ?? 0) + hits);
  }
  // inclusive hits under each node, counted once per matching root (an inner match is skipped)
  const inclusive = new Map<number, number>();
  const total = (n: ProfileNode): number => {
    const cached = inclusive.get(n.id);
    if (cached !== undefined) return cached;
    let sum = n.hitCount ?? 0;
    for (const c of n.children ?? []) sum += total(byId.get(c)!);
    inclusive.set(n.id, sum);
    return sum;
  };
  const totals: Record<string, number> = {};
  const walk = (n: ProfileNode, inside: Set<string>) => {
    const now = new Set(inside);
    for (const [label, re] of Object.entries(TOTALS))
      if (!inside.has(label) && re.test(name(n))) {
        totals[label] = (totals[label] ?? 0) + total(n) * msPerHit;
        now.add(label);
      }
    for (const c of n.children ?? []) walk(byId.get(c)!, now);
  };
  const root = profile.nodes[0];
  if (root) walk(root, new Set());
  const selfTop = [...self]
    .filter(([fn]) => !fn.startsWith('(idle)'))
    .sort((a, b) => b[1] - a[1])
    .slice(0, 15)
    .map(([fn, hits]) => ({ fn, ms: +(hits * msPerHit).toFixed(1) }));
  return {
    sampledMs: Math.round(sampledMs),
    busyMs: Math.round((samples - idle) * msPerHit),
    selfTop,
    totals: Object.fromEntries(Object.entries(totals).map(([k, v]) => [k, +v.toFixed(1)])),
  };
}
