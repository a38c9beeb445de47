import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import {
  canUseNetns,
  createTopology,
  NETNS_SECRET,
  type NetnsNode,
  netnsSkipMessage,
  type Topology,
  warmUpCli,
} from '../support/netns.js';
import { eventually } from '../support/wait.js';

/**
 * One decision, one side, with real processes and a real cut: ten `doyen node` processes, each
 * in its own network namespace, keep-oldest, cut the oldest 2 | the other 8. The larger side
 * loses, and every one of its eight is down within a second of its decision (each exits with
 * --on-downed exit, so a decider that downs itself stops at once, as in production).
 */
const ok = canUseNetns();
if (!ok) console.warn(netnsSkipMessage());

const NAMES = ['n01', 'n02', 'n03', 'n04', 'n05', 'n06', 'n07', 'n08', 'n09', 'n10'] as const;
type Name = (typeof NAMES)[number];
const OLDEST: Name[] = ['n01', 'n02'];
const OTHERS: Name[] = NAMES.filter((n) => !OLDEST.includes(n));
const PORT = 2552;
const HTTP_PORT = 8558;

interface ClusterView {
  status: string;
  members: { name: string; status: string }[];
}

describe.skipIf(!ok)('real partitions: keep-oldest, ten CLI nodes cut 2 | 8 (the larger side loses)', () => {
  let topo: Topology;
  const nodes = new Map<Name, NetnsNode>();

  beforeAll(async () => {
    topo = createTopology(NAMES);
    await warmUpCli();
  }, 150_000);
  afterAll(async () => {
    await topo?.teardown();
  });

  const addr = (name: Name) => `${topo.host(name).ip}:${PORT}`;
  const view = (name: Name): Promise<ClusterView | undefined> =>
    topo.getJson(name, `http://${topo.host(name).ip}:${HTTP_PORT}/cluster`);
  const ups = (v: ClusterView | undefined) => (v?.members ?? []).filter((m) => m.status === 'up').length;
  const events = (name: Name, event: string) =>
    nodes
      .get(name)!
      .events()
      .filter((e) => e.event === event);

  function start(name: Name): void {
    const node = topo.spawnNode(name, [
      'node',
      '--cluster',
      'netns-keep-oldest-10',
      '--host',
      topo.host(name).ip,
      '--port',
      String(PORT),
      '--seeds',
      `${addr('n01')},${addr('n02')}`,
      '--http-port',
      String(HTTP_PORT),
      '--name',
      name,
      '--secret',
      NETNS_SECRET,
      '--downing',
      'keep-oldest',
      '--partitions',
      '0',
      '--on-downed',
      'exit',
    ]);
    nodes.set(name, node);
  }

  async function allUp(names: readonly Name[], count: number, what: string, timeoutMs: number) {
    await eventually(
      async () => (await Promise.all(names.map(view))).every((v) => v?.status === 'up' && ups(v) === count),
      { timeoutMs, intervalMs: 500, what },
    );
  }

  it('the eight without the oldest are all down within decision + 1 s; the oldest two carry on', async () => {
    onTestFailed(() => {
      for (const [name, node] of nodes) {
        const lines = node
          .events()
          .filter((e) => /^(sbr|member\.(downed|unreachable)|node\.)/.test(String(e.event)))
          .map((e) => JSON.stringify(e).slice(0, 300));
        console.error(`--- ${name} (exit ${JSON.stringify(node.exitStatus())})\n${lines.join('\n')}`);
      }
    });
    // ages follow join order: n01 forms the cluster, n02 joins, then the eight at once
    start('n01');
    await allUp(['n01'], 1, 'n01 up', 40_000);
    start('n02');
    await allUp(['n01', 'n02'], 2, 'n01 and n02 up', 30_000);
    for (const n of OTHERS) start(n);
    await allUp(NAMES, 10, 'ten up members in every view', 60_000);

    await topo.partition(OLDEST, OTHERS);
    const cut = Date.now();
    await eventually(() => OTHERS.every((n) => nodes.get(n)!.exitStatus() !== undefined), {
      timeoutMs: 30_000,
      intervalMs: 200,
      what: 'the eight to exit',
    });
    for (const n of OTHERS) expect(nodes.get(n)!.exitStatus(), n).toEqual({ code: 4, signal: null });

    const decisions = OTHERS.flatMap((n) => events(n, 'sbr.decision'));
    expect(decisions.length).toBeGreaterThan(0);
    for (const d of decisions) expect(d.decision).toBe('down-reachable');
    const decidedAt = Math.min(...decisions.map((d) => d.time as number));
    const downAt = OTHERS.map((n) => {
      const own = events(n, 'member.downed').find((e) => e.self === true);
      expect(own, `${n} logs its own downing`).toBeDefined();
      return own!.time as number;
    });
    const spread = Math.max(...downAt) - decidedAt;
    console.info(
      `keep-oldest 2 | 8 on real processes: decision ${decidedAt - cut} ms after the cut, ` +
        `all eight down ${spread} ms after the decision (${decisions.filter((d) => d.by === 'decider').length} by the decider, ` +
        `${decisions.filter((d) => d.by === 'self').length} on their own)`,
    );
    expect(spread).toBeLessThanOrEqual(1000);

    // the oldest two survive as a cluster of two
    await allUp(OLDEST, 2, 'the oldest two to carry on as two', 20_000);
    for (const n of OLDEST) expect(nodes.get(n)!.exitStatus()).toBeUndefined();
  }, 150_000);
});
