import { afterEach, describe, expect, it, onTestFailed } from 'vitest';
import type { ClusterView } from '../../packages/doyen/src/management-http.js';
import { TEST_HTTP_TOKEN } from '../support/cli-process.js';
import {
  canUseNetns,
  NETNS_HTTP_PORT as HTTP_PORT,
  type NetnsNode,
  netnsSkipMessage,
  NETNS_CLUSTER_PORT as PORT,
  type Topology,
} from '../support/netns.js';
import { useTopology } from '../support/netns-hooks.js';
import { eventually } from '../support/wait.js';

/**
 * Five `doyen node` processes, each in its own network namespace (a host of its own), cut 3 | 2
 * by firewall rules inside the namespaces: the issue "real partitions".
 */
const ok = canUseNetns();
if (!ok) console.warn(netnsSkipMessage());

const NAMES = ['athens', 'byzantium', 'cyrene', 'delphi', 'ephesus'] as const;
type Name = (typeof NAMES)[number];
const MAJORITY: Name[] = ['athens', 'byzantium', 'cyrene'];
const MINORITY: Name[] = ['delphi', 'ephesus'];
/**
 * The strict merge checks: the minority rejoins through `split-brain.merge`, and a heal never
 * downs the larger side. They caught two bugs (merge orders lost on restart; updates adopted
 * from the other side by version); DOYEN_NETNS_STRICT=0 relaxes them to a printed outcome.
 */
const KNOWN_BUGS = process.env.DOYEN_NETNS_STRICT !== '0';

describe.skipIf(!ok)('real partitions between network namespaces (five CLI nodes)', () => {
  let topo: Topology;
  let nodes = new Map<Name, NetnsNode>();
  useTopology(NAMES, (t) => (topo = t));
  afterEach(async () => {
    await topo?.killNodes();
    await topo?.heal();
  });

  const addr = (name: Name) => `${topo.host(name).ip}:${PORT}`;
  const view = (name: Name): Promise<ClusterView | undefined> =>
    topo.getJson(name, `http://${topo.host(name).ip}:${HTTP_PORT}/cluster`);
  const upNames = (v: ClusterView | undefined) =>
    (v?.members ?? [])
      .filter((m) => m.status === 'up')
      .map((m) => m.name)
      .sort();
  const sorted = (names: readonly string[]) => [...names].sort();
  const events = (name: Name, event: string) =>
    nodes
      .get(name)!
      .events()
      .filter((e) => e.event === event);

  function start(name: Name, cluster: string, extra: string[]): NetnsNode {
    const node = topo.spawnMember(name, cluster, ['athens', 'byzantium'], extra);
    nodes.set(name, node);
    return node;
  }

  /** Waits until every named node's own view has exactly `expected` up. */
  async function allSee(
    names: readonly Name[],
    expected: readonly string[],
    what: string,
    timeoutMs: number,
  ) {
    return eventually(
      async () => {
        const views = await Promise.all(names.map(view));
        return views.every((v) => sameList(upNames(v), sorted(expected))) && views;
      },
      { timeoutMs, intervalMs: 200, what },
    ) as Promise<ClusterView[]>;
  }

  /**
   * Ages follow join order: athens forms the cluster, byzantium and cyrene join, then delphi,
   * then ephesus, so delphi is the oldest of the minority (its coordinator under auto).
   */
  async function startCluster(cluster: string, extra: string[]): Promise<ClusterView[]> {
    nodes = new Map();
    for (const n of MAJORITY) start(n, cluster, extra);
    await allSee(MAJORITY, MAJORITY, 'athens, byzantium and cyrene up', 25_000);
    start('delphi', cluster, extra);
    await allSee(['delphi'], [...MAJORITY, 'delphi'], 'delphi up', 15_000);
    start('ephesus', cluster, extra);
    const views = await allSee(NAMES, NAMES, 'five up members in every view', 15_000);
    for (const v of views) expect(v.coordinator).toBe(addr('athens'));
    return views;
  }

  /** Under auto: athens's side and delphi's side each see only themselves up, each its own coordinator. */
  async function twoClusters(minority: readonly Name[]): Promise<void> {
    await eventually(
      async () => {
        const [majority, others] = await Promise.all([
          Promise.all(MAJORITY.map(view)),
          Promise.all(minority.map(view)),
        ]);
        return (
          majority.every(
            (v) => sameList(upNames(v), sorted(MAJORITY)) && v?.coordinator === addr('athens'),
          ) &&
          others.every((v) => sameList(upNames(v), sorted(minority)) && v?.coordinator === addr('delphi'))
        );
      },
      {
        timeoutMs: 10_000,
        intervalMs: 200,
        what: `two clusters: athens with 3, delphi with ${minority.length}`,
      },
    );
  }

  function dumpOnFailure(): void {
    onTestFailed(() => {
      for (const [name, node] of nodes) {
        const lines = node
          .events()
          .filter((e) => !String(e.event).startsWith('wire.'))
          .map((e) => JSON.stringify(e).slice(0, 300));
        console.error(
          `--- ${name} (${node.host.ns}, exit ${JSON.stringify(node.exitStatus())})\n${lines.join('\n')}`,
        );
        const other = node.logs.filter((l) => !l.startsWith('{'));
        if (other.length > 0) console.error(other.join('\n'));
      }
    });
  }

  it('keep-majority: the minority downs itself and exits 4; the majority downs it', async () => {
    dumpOnFailure();
    await startCluster('netns-keep-majority', ['--on-downed', 'exit']);

    await topo.partition(MAJORITY, MINORITY);
    const cut = Date.now();

    const exits = await withTimeout(
      Promise.all(MINORITY.map((n) => nodes.get(n)!.exited)),
      15_000,
      'delphi and ephesus to exit',
    );
    const minorityExitMs = Date.now() - cut;
    for (const e of exits) expect(e).toEqual({ code: 4, signal: null });
    for (const n of MINORITY) {
      const downedReachable = events(n, 'sbr.decision').some((e) => e.decision === 'down-reachable');
      const downedSelf = events(n, 'member.downed').some((e) => e.self === true);
      expect(downedReachable || downedSelf, `${n} logs sbr.decision down-reachable or its own downing`).toBe(
        true,
      );
      expect(events(n, 'node.stopped').map((e) => e.reason)).toEqual(['downed']);
    }
    // one of the minority decided for both (the first whose stable-after ran out tells the other;
    // usually its oldest, delphi, but a late detection there lets ephesus decide first)
    expect(MINORITY.flatMap((n) => events(n, 'sbr.decision').map((e) => e.decision))).toContain(
      'down-reachable',
    );

    const majority = await allSee(MAJORITY, MAJORITY, 'the majority to keep its three members', 15_000);
    for (const v of majority) {
      expect(v.coordinator).toBe(addr('athens'));
      expect(v.status).toBe('up');
      for (const n of MINORITY) {
        const row = v.members.find((m) => m.name === n);
        expect(row, `${v.self} still lists ${n}`).toBeDefined();
        expect(row).toMatchObject({ status: 'down', reachable: false });
      }
    }
    const decisions = MAJORITY.flatMap((n) => events(n, 'sbr.decision'));
    expect(decisions.map((e) => e.decision)).toContain('down-unreachable');
    expect(decisions.every((e) => e.decision === 'down-unreachable')).toBe(true);
    const downed = new Set(decisions.flatMap((e) => e.down as string[]).map((k) => k.replace(/#.*$/, '')));
    expect(downed).toEqual(new Set(MINORITY.map(addr)));
    for (const n of MAJORITY) expect(nodes.get(n)!.exitStatus()).toBeUndefined();
    console.info(`keep-majority: minority exited ${minorityExitMs} ms after the cut`);
  }, 90_000);

  it('auto: the halves become two clusters during the partition and merge after the heal', async () => {
    dumpOnFailure();
    const initial = await startCluster('netns-auto', ['--downing', 'auto']);
    const uidBefore = (n: Name) => initial[NAMES.indexOf(n)]!.uid;

    await topo.partition(MAJORITY, MINORITY);
    const cut = Date.now();
    await twoClusters(MINORITY);
    const splitMs = Date.now() - cut;
    // nothing downed itself: under auto both halves keep running
    for (const n of NAMES) expect(nodes.get(n)!.exitStatus()).toBeUndefined();
    const versions = (await Promise.all(NAMES.map(view))).map((v, i) => `${NAMES[i]} v${v?.version}`);

    await topo.heal();
    const healed = Date.now();
    const views = (await eventually(
      async () => {
        const vs = await Promise.all(NAMES.map(view));
        return (
          vs.every((v) => sameList(upNames(v), sorted(NAMES)) && v?.coordinator === addr('athens')) && vs
        );
      },
      { timeoutMs: 15_000, intervalMs: 200, what: 'one cluster of five under athens after the heal' },
    )) as ClusterView[];
    const mergeMs = Date.now() - healed;
    // one cluster: everybody lists the same up incarnations
    const upUids = (v: ClusterView) =>
      v.members
        .filter((m) => m.status === 'up')
        .map((m) => `${m.name}#${m.uid}`)
        .sort();
    for (const v of views) expect(upUids(v)).toEqual(upUids(views[0]!));
    // the larger side kept its incarnations; the smaller side came back as new ones
    for (const n of MAJORITY) {
      expect(views[NAMES.indexOf(n)]!.uid).toBe(uidBefore(n));
      expect(events(n, 'node.restart')).toEqual([]);
    }
    for (const n of MINORITY) {
      expect(views[NAMES.indexOf(n)]!.uid).not.toBe(uidBefore(n));
      expect(events(n, 'node.restart').length, `${n} restarted as a new incarnation`).toBeGreaterThan(0);
    }
    for (const n of NAMES) expect(nodes.get(n)!.exitStatus()).toBeUndefined();

    // The intended path: delphi's split-brain checker finds athens's larger cluster and tells
    // ephesus to merge; both restart with reason `merge`. Today two cluster bugs (see
    // DOYEN_NETNS_KNOWN_BUGS below) let most heals end through a downing instead.
    const how = MINORITY.map(
      (n) =>
        `${n}: ${[
          ...events(n, 'split-brain.merge').map((e) => `split-brain.merge(${e.role})`),
          ...events(n, 'node.restart').map((e) => `node.restart(${e.reason})`),
        ].join(' ')}`,
    );
    const merged = MINORITY.every(
      (n) =>
        events(n, 'split-brain.merge').length > 0 &&
        events(n, 'node.restart').some((e) => e.reason === 'merge'),
    );
    if (KNOWN_BUGS) {
      expect(events('delphi', 'split-brain.merge').map((e) => e.role)).toContain('initiator');
      expect(events('ephesus', 'split-brain.merge').map((e) => e.role)).toContain('member');
      expect(merged, how.join('; ')).toBe(true);
    } else if (!merged) {
      console.warn(
        `auto: the minority did not rejoin through split-brain.merge (known bug): ${how.join('; ')}`,
      );
    }
    console.info(
      `auto: split visible ${splitMs} ms after the cut (${versions.join(', ')}), ` +
        `one cluster ${mergeMs} ms after the heal; ${how.join('; ')}`,
    );
  }, 90_000);

  it.skipIf(!KNOWN_BUGS)(
    'auto: a heal never downs the larger side, even when the smaller side has the higher membership version',
    async () => {
      dumpOnFailure();
      const initial = await startCluster('netns-auto-versions', ['--downing', 'auto']);
      await topo.partition(MAJORITY, MINORITY);
      await twoClusters(MINORITY);
      // churn on the smaller side: ephesus leaves (leaving, exiting, removed: three new versions)
      const leave = `http://${topo.host('ephesus').ip}:${HTTP_PORT}/cluster/leave`;
      const operator = { authorization: `Bearer ${TEST_HTTP_TOKEN}`, 'content-type': 'application/json' };
      expect(await topo.requestJson('ephesus', leave, { method: 'POST', headers: operator })).toEqual({
        leaving: true,
      });
      expect(await withTimeout(nodes.get('ephesus')!.exited, 15_000, 'ephesus to leave')).toEqual({
        code: 0,
        signal: null,
      });
      await twoClusters(['delphi']);
      const [athens, delphi] = await Promise.all([view('athens'), view('delphi')]);
      console.info(`before the heal: athens v${athens?.version}, delphi v${delphi?.version}`);

      await topo.heal();
      const survivors: Name[] = [...MAJORITY, 'delphi'];
      await allSee(survivors, survivors, 'one cluster of four after the heal', 15_000);
      for (const n of MAJORITY) {
        expect(events(n, 'node.restart'), `${n} (larger side) restarted`).toEqual([]);
        expect((await view(n))?.uid).toBe(initial[NAMES.indexOf(n)]!.uid);
      }
      expect((await view('delphi'))?.coordinator).toBe(addr('athens'));
      expect(events('delphi', 'split-brain.merge').map((e) => e.role)).toContain('initiator');
    },
    90_000,
  );
});

/**
 * One decision, one side, with real processes and a real cut: ten `doyen node` processes, each
 * in its own network namespace, keep-oldest, cut the oldest 2 | the other 8. The larger side
 * loses, and every one of its eight is down within a second of its decision (each exits with
 * --on-downed exit, so a decider that downs itself stops at once, as in production). In this
 * file so that it never runs beside the five-node tests (the machine may have two cores).
 */
const TEN = ['n01', 'n02', 'n03', 'n04', 'n05', 'n06', 'n07', 'n08', 'n09', 'n10'] as const;
type Ten = (typeof TEN)[number];

interface AgedView {
  status: string;
  uid: string;
  members: { name: string; uid: string; age: number; status: string }[];
}

describe.skipIf(!ok)('real partitions: keep-oldest, ten CLI nodes cut 2 | 8 (the larger side loses)', () => {
  let topo: Topology;
  const nodes = new Map<Ten, NetnsNode>();
  useTopology(TEN, (t) => (topo = t));

  const view = (name: Ten): Promise<AgedView | undefined> =>
    topo.getJson(name, `http://${topo.host(name).ip}:${HTTP_PORT}/cluster`);
  const ups = (v: AgedView | undefined) => (v?.members ?? []).filter((m) => m.status === 'up').length;
  /**
   * `--on-downed restart`: a joiner still starting up can be found unreachable and downed
   * before its welcome is handled (a loaded CI host); it then rejoins as a new incarnation
   * instead of leaving the cluster short. The measure reads the logs, which span incarnations.
   */
  function start(name: Ten): void {
    const node = topo.spawnMember(
      name,
      'netns-keep-oldest-10',
      ['n01', 'n02'],
      ['--downing', 'keep-oldest', '--partitions', '0', '--on-downed', 'restart'],
    );
    nodes.set(name, node);
  }

  it('the eight without the oldest two are all down within decision + 1 s; the oldest two carry on', async () => {
    onTestFailed(() => {
      for (const [name, node] of nodes) {
        const lines = node.logs
          .filter((l) => !l.startsWith('{') || /"event":"(sbr|member\.(downed|unreachable)|node\.)/.test(l))
          .map((l) => l.slice(0, 300));
        console.error(`--- ${name} (exit ${JSON.stringify(node.exitStatus())})\n${lines.join('\n')}`);
      }
    });
    // all at once: n01 (the first seed) forms the cluster, the others join in whatever order
    for (const n of TEN) start(n);
    const views = (await eventually(
      async () => {
        const vs = await Promise.all(TEN.map(view));
        return vs.every((v) => v?.status === 'up' && ups(v) === 10) && vs;
      },
      { timeoutMs: 90_000, intervalMs: 500, what: 'ten up members in every view' },
    )) as AgedView[];
    // the two oldest (lowest age) against the eight others
    const byAge = [...views[0]!.members].sort((a, b) => a.age - b.age).map((m) => m.name as Ten);
    const oldest = byAge.slice(0, 2);
    const others = byAge.slice(2);
    const logged = new Map(TEN.map((n) => [n, nodes.get(n)!.logs.length]));
    const since = (n: Ten, event: string) =>
      nodes
        .get(n)!
        .logs.slice(logged.get(n))
        .filter((l) => l.includes(`"event":"${event}"`))
        .map((l) => JSON.parse(l) as Record<string, unknown>);

    await topo.partition(oldest, others);
    const cut = Date.now();
    await eventually(() => others.every((n) => since(n, 'member.downed').some((e) => e.self === true)), {
      timeoutMs: 30_000,
      intervalMs: 200,
      what: 'the eight to be downed',
    });
    const decisions = others.flatMap((n) => since(n, 'sbr.decision'));
    for (const d of decisions) expect(d.decision).toBe('down-reachable');
    const decidedAt = Math.min(...decisions.map((d) => d.time as number));
    const downAt = others.map((n) => since(n, 'member.downed').find((e) => e.self === true)!.time as number);
    const spread = Math.max(...downAt) - decidedAt;
    console.info(
      `keep-oldest 2 | 8 on real processes: decision ${decidedAt - cut} ms after the cut, ` +
        `all eight down ${spread} ms after the decision (${decisions.filter((d) => d.by === 'decider').length} ` +
        `by the decider, ${decisions.filter((d) => d.by === 'self').length} on their own)`,
    );
    expect(spread).toBeLessThanOrEqual(1000);

    // the oldest two survive as a cluster of two, the same incarnations as before the cut
    await eventually(
      async () => (await Promise.all(oldest.map(view))).every((v) => v?.status === 'up' && ups(v) === 2),
      { timeoutMs: 20_000, intervalMs: 500, what: 'the oldest two to carry on as two' },
    );
    for (const n of oldest) expect(since(n, 'node.restart')).toEqual([]);
  }, 200_000);
});

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

async function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
