import { afterEach, describe, expect, it } from 'vitest';
import { EtcdLease } from '../../packages/lease/src/index.js';
import { type ClusterNode, freePorts, startClusterNode } from '../support/cluster-nodes.js';
import { etcdForSuite, uniqueCluster } from '../support/etcd.js';
import { eventually } from '../support/wait.js';

const endpoints = etcdForSuite('lease-majority with etcd');
const running: ClusterNode[] = [];
const leases: EtcdLease[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((n) => n.transport.close()));
  await Promise.all(leases.splice(0).map((l) => l.close()));
});

describe.skipIf(!endpoints)('lease-majority backed by a real etcd', () => {
  it('after a crash the surviving side decides by holding the etcd lease', async () => {
    const cluster = uniqueCluster('sbr');
    const ports = await freePorts(3);
    const seeds = [{ host: '127.0.0.1', port: ports[0]! }];
    for (const port of ports) {
      const lease = new EtcdLease({
        endpoints: endpoints!,
        cluster,
        name: 'sbr',
        ttlMs: 3000,
        timeoutMs: 1000,
      });
      leases.push(lease);
      running.push(
        await startClusterNode(port, seeds, {
          downing: 'lease-majority',
          sbr: { downIfAlone: true, acquireLeaseDelayForMinorityMs: 1000, lease, stableAfterMs: 500 },
        }),
      );
    }
    await eventually(
      () =>
        running.every(
          (n) => n.cluster.state().membership?.members.filter((m) => m.status === 'up').length === 3,
        ),
      {
        what: 'three up members',
      },
    );
    const victim = running.pop()!;
    await victim.transport.close();
    await eventually(
      () =>
        running.every(
          (n) => n.cluster.state().membership?.members.length === 2 && n.cluster.state().status === 'up',
        ),
      { timeoutMs: 15_000, what: 'the survivors to down the crashed node' },
    );
    // the decider of the surviving side holds the lease
    const decider = running[0]!.cluster.self.key;
    expect(leases[0]!.checkLease(decider)).toBe(true);
  });
});
