import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ClusterView } from '../../packages/doyen/src/management-http.js';
import { dnsmasqMissing } from '../support/dnsmasq.js';
import {
  canUseNetns,
  createTopology,
  NETNS_HTTP_PORT as HTTP_PORT,
  type NetnsNode,
  netnsMissing,
  NETNS_CLUSTER_PORT as PORT,
  type Topology,
  warmUpCli,
} from '../support/netns.js';
import { eventually } from '../support/wait.js';

/**
 * Cluster bootstrap with no seed list: six `doyen node` processes, each in its own network
 * namespace, find each other through the A records a real DNS server (Debian's dnsmasq, in the
 * bridge namespace) holds for `doyen.test`, as pods find each other through a headless service.
 */
const missing = [...netnsMissing(), ...(canUseNetns() ? dnsmasqMissing() : [])];
const ok = missing.length === 0;
if (!ok) console.warn(`bootstrap tests skipped: missing ${missing.join(', ')}`);

const NAMES = ['n1', 'n2', 'n3', 'n4', 'n5', 'n6'] as const;
type Name = (typeof NAMES)[number];
const FIRST_FIVE: Name[] = ['n1', 'n2', 'n3', 'n4', 'n5'];
const SERVICE = 'doyen.test';
const STABLE_MARGIN_MS = 1500;
/** Long enough for the lowest contact point to have formed a cluster if the rule let it. */
const WAIT_FOR_NOTHING_MS = STABLE_MARGIN_MS + 3000;

describe.skipIf(!ok)('cluster bootstrap through DNS between network namespaces (dnsmasq)', () => {
  let topo: Topology;
  let hostsDir: string;
  let dns: string;
  const nodes = new Map<Name, NetnsNode>();

  beforeAll(async () => {
    topo = createTopology(NAMES);
    hostsDir = mkdtempSync(join(tmpdir(), 'doyen-dns-'));
    publish([]);
    dns = await topo.startDnsServer(hostsDir);
    await warmUpCli();
  }, 150_000);
  afterAll(async () => {
    await topo?.teardown();
    if (hostsDir) rmSync(hostsDir, { recursive: true, force: true });
  });
  afterEach(async () => {
    await topo?.killNodes();
    nodes.clear();
    await topo?.heal();
    publish([]);
  });

  /** The A records of the service: one per named host (the file dnsmasq re-reads on change). */
  function publish(names: readonly Name[]): void {
    const lines = names.map((n) => `${topo?.host(n).ip ?? '0.0.0.0'} ${SERVICE}`);
    writeFileSync(join(hostsDir, 'service'), `${lines.join('\n')}\n`, { mode: 0o644 });
  }

  function start(name: Name): NetnsNode {
    const node = topo.spawnMember(
      name,
      'bootstrap',
      [],
      [
        '--partitions',
        '0',
        '--discovery',
        'dns',
        '--service',
        SERVICE,
        '--dns-server',
        dns,
        '--required-contact-points',
        '3',
        '--stable-margin-ms',
        String(STABLE_MARGIN_MS),
        '--discovery-interval-ms',
        '300',
      ],
    );
    nodes.set(name, node);
    return node;
  }

  /** Starts the nodes in a random order, 0–250 ms apart. */
  async function startShuffled(names: readonly Name[]): Promise<void> {
    const order = [...names].sort(() => Math.random() - 0.5);
    for (const name of order) {
      start(name);
      await new Promise((r) => setTimeout(r, Math.random() * 250));
    }
  }

  const url = (name: Name, path: string) => `http://${topo.host(name).ip}:${HTTP_PORT}${path}`;
  const view = (name: Name): Promise<ClusterView | undefined> => topo.getJson(name, url(name, '/cluster'));
  const upNames = (v: ClusterView | undefined) =>
    (v?.members ?? [])
      .filter((m) => m.status === 'up')
      .map((m) => m.name)
      .sort();
  const formed = (names: readonly Name[]) =>
    names.filter((n) =>
      nodes
        .get(n)
        ?.events()
        .some((e) => e.event === 'bootstrap.form'),
    );

  /** Every named node up, each seeing exactly `names` up. */
  async function oneCluster(names: readonly Name[], timeoutMs = 30_000): Promise<void> {
    await eventually(
      async () => {
        const views = await Promise.all(names.map(view));
        return views.every((v) => v?.status === 'up' && upNames(v).join() === [...names].sort().join());
      },
      { timeoutMs, intervalMs: 200, what: `one cluster of ${names.join(', ')}` },
    );
  }

  /** Nothing formed: no node up, every one alive but not ready, none offering seed nodes. */
  async function nothingFormed(names: readonly Name[]): Promise<void> {
    expect(formed(names)).toEqual([]);
    for (const name of names) {
      const ready = await topo.requestJson(name, url(name, '/health/ready'));
      expect(ready, `${name} must not be ready`).toBeUndefined(); // 503
      expect(await topo.getJson(name, url(name, '/health/alive'))).toEqual({ alive: true });
      const seeds = await topo.getJson(name, url(name, '/bootstrap/seed-nodes'));
      expect(seeds).toEqual({ selfNode: `doyen://bootstrap@${topo.host(name).ip}:${PORT}`, seedNodes: [] });
    }
  }

  it('DNS answering nothing forms nothing; once the records appear, five nodes form one cluster, a sixth joins it, a restarted one rejoins', async () => {
    await startShuffled(FIRST_FIVE);
    await new Promise((r) => setTimeout(r, WAIT_FOR_NOTHING_MS));
    await nothingFormed(FIRST_FIVE);
    expect(
      nodes
        .get('n1')!
        .events()
        .some((e) => e.event === 'bootstrap.waiting'),
    ).toBe(true);

    publish(FIRST_FIVE);
    await oneCluster(FIRST_FIVE);
    // exactly one node formed it: the lowest address
    expect(formed(FIRST_FIVE)).toEqual(['n1']);
    for (const name of FIRST_FIVE.slice(1)) {
      expect(
        nodes
          .get(name)!
          .events()
          .some((e) => e.event === 'bootstrap.join'),
      ).toBe(true);
    }
    const seeds = await topo.getJson('n3', url('n3', '/bootstrap/seed-nodes'));
    expect(seeds.seedNodes.map((m: { node: string }) => m.node)).toHaveLength(5);

    // a DNS update adds a sixth: it joins the running cluster
    publish(NAMES);
    start('n6');
    await oneCluster(NAMES);
    expect(formed(['n6'])).toEqual([]);

    // the lowest, the one that formed, crashes and starts again: it rejoins, never an island
    nodes.get('n1')!.process.kill('SIGKILL');
    await nodes.get('n1')!.exited;
    const again = start('n1');
    await oneCluster(NAMES, 45_000);
    expect(again.events().some((e) => e.event === 'bootstrap.join')).toBe(true);
    expect(again.events().some((e) => e.event === 'bootstrap.form')).toBe(false);
  }, 150_000);

  it('a partitioned start forms nothing until the heal, then exactly one cluster', async () => {
    publish(FIRST_FIVE);
    // n1 (the lowest) and n2 cannot reach n3, n4, n5; the DNS server is reachable from all
    await topo.partition(['n1', 'n2'], ['n3', 'n4', 'n5']);
    await startShuffled(FIRST_FIVE);
    await new Promise((r) => setTimeout(r, WAIT_FOR_NOTHING_MS));
    await nothingFormed(FIRST_FIVE);
    // positive control: within each side the probes do get through
    expect(await topo.getJson('n2', url('n1', '/bootstrap/seed-nodes'))).toBeDefined();
    expect(await topo.getJson('n2', url('n3', '/bootstrap/seed-nodes'))).toBeUndefined();

    await topo.heal();
    await oneCluster(FIRST_FIVE);
    expect(formed(FIRST_FIVE)).toEqual(['n1']);
  }, 120_000);
});
