import { describe, expect, it } from 'vitest';
import { installMembershipAuthority } from '../../packages/cluster/src/index.js';
import type { Message } from '../../packages/core/src/index.js';
import { PARTITIONS_PATH, type PartitionTable } from '../../packages/partitions/src/index.js';
import { WsTransport } from '../../packages/wire/src/index.js';
import { type ClusterNode, freePorts } from '../support/cluster-nodes.js';
import { clusterNodesClosedAfterEach } from '../support/cluster-nodes-closed.js';
import { type PartitionNode, startPartitionNode } from '../support/partition-node.js';
import { eventually } from '../support/wait.js';

const P = 16;

const tableOf = (version: number, owner: string): PartitionTable => ({
  version,
  partitionCount: P,
  owners: Array.from({ length: P }, () => owner),
  backups: Array.from({ length: P }, () => []),
});

/**
 * The finding: one `partitions.table` at version 10^12 from any member gave every partition to a
 * nonexistent node on every node, and the real allocator's next table was ignored from then on.
 * Now a table is adopted only from the allocator's host as the receiver sees it, judged at the
 * membership it was computed from, and only when it names members.
 */
describe('partition tables are adopted only from the allocator host', () => {
  const nodes = clusterNodesClosedAfterEach();

  it('refuses a forged table from a non-member and from a member that is not the host; adopts the real ones', async () => {
    const [pa, pb, pc, pd, px] = await freePorts(5);
    const a = await startPartitionNode(pa!, pa!, P);
    nodes.push(a);
    await a.cluster.whenUp();
    const b = await startPartitionNode(pb!, pa!, P);
    const c = await startPartitionNode(pc!, pa!, P);
    nodes.push(b, c);
    await Promise.all([b.cluster.whenUp(), c.cluster.whenUp()]);
    const live = (n: PartitionNode) => new Set(n.service.table()?.owners);
    await eventually(() => [a, b, c].every((n) => live(n).size === 3), {
      what: 'a table over three members',
    });
    const before = b.service.table()!;
    const sys = (n: ClusterNode) => n.transport.system;
    const membershipVersion = b.cluster.state().membership!.version;

    // a non-member that holds the cluster secret (authenticated, never joined)
    const x = await WsTransport.start({ cluster: 'it', host: '127.0.0.1', port: px!, wire: { secret: 's' } });
    nodes.push({ transport: x, cluster: undefined as never });
    const evil = '10.66.6.6:2552#evil';
    /** A table at version 10^12 giving every partition to `owner`, as if computed at `atVersion`. */
    const send = (
      fromSystem: ClusterNode['transport']['system'],
      to: ClusterNode,
      owner: string,
      atVersion = membershipVersion,
    ) =>
      fromSystem.remoteRef(sys(to).node, PARTITIONS_PATH).send({
        type: 'partitions.table',
        table: tableOf(1e12, owner),
        replyTo: fromSystem.remoteRef(fromSystem.node, '/user/singleton-partition-allocator'),
        membershipVersion: atVersion,
      } as unknown as Message);

    // 1. from a non-member: dropped at the boundary as unauthorized
    send(x.system, b, evil);
    await eventually(() => sys(b).metrics.value('doyen_wire_unauthorized_total') >= 1, {
      what: "the non-member's table counted as unauthorized",
    });
    // 2. from a member that does not host the allocator, naming itself everywhere: refused
    send(sys(c), b, c.cluster.self.key);
    const refused = (n: ClusterNode, reason: string) =>
      sys(n).metrics.value('doyen_partitions_tables_refused_total', { reason });
    await eventually(() => refused(b, 'not-allocator-host') >= 1, { what: "C's table refused by B" });
    // 3. from the host itself, naming a node that is not a member: refused
    send(sys(a), b, evil);
    await eventually(() => refused(b, 'unknown-owner') >= 1, {
      what: "the host's table naming a stranger refused",
    });
    // 4. from the host, but computed from a membership B has not reached: held, not adopted
    send(sys(a), b, c.cluster.self.key, membershipVersion + 1000);
    await new Promise((r) => setTimeout(r, 300));
    expect(b.service.table()).toEqual(before);
    expect(b.service.table()!.owners).not.toContain(evil);

    // the real allocator's next table is still adopted: D joins, the allocator moves partitions
    const d = await startPartitionNode(pd!, pa!, P);
    nodes.push(d);
    await d.cluster.whenUp();
    await eventually(() => [a, b, c, d].every((n) => live(n).size === 4), {
      what: 'a table over four members',
    });
    expect(b.service.table()!.version).toBe(before.version + 1);

    // positive control: the same crafted table (v10^12, every partition to C), sent by the node
    // that hosts the allocator, is adopted — so what refused C's was the authority, not its shape
    // (B acknowledges 10^12 to the allocator on A, which then republishes its own table numbered
    // past it: the adoption is read from B's listener, not from B's table a moment later)
    const adopted: PartitionTable[] = [];
    b.service.subscribe((t) => adopted.push(t));
    const v = b.cluster.state().membership!.version;
    send(sys(a), b, c.cluster.self.key, v);
    await eventually(() => adopted.some((t) => t.version === 1e12), { what: "the host's table adopted" });
    expect(new Set(adopted.find((t) => t.version === 1e12)!.owners)).toEqual(new Set([c.cluster.self.key]));
  });

  it('a table refused while the receiver did not know its sender is sent again after the ack timeout', async () => {
    const [pa, pb, pc] = await freePorts(3);
    const a = await startPartitionNode(pa!, pa!, P);
    nodes.push(a);
    await a.cluster.whenUp();
    const b = await startPartitionNode(pb!, pa!, P);
    nodes.push(b);
    await b.cluster.whenUp();
    await eventually(() => new Set(b.service.table()?.owners).size === 2, {
      what: 'a table over two members',
    });
    const types = b.transport.system.messageTypes;
    // B's view lags behind as if it did not know A yet: everything only members may send, from A, is refused
    const aKey = a.cluster.self.key;
    types.defineAuthority('member', (origin) => origin !== aKey);
    const unauthorized = () => b.transport.system.metrics.value('doyen_wire_unauthorized_total');
    const c = await startPartitionNode(pc!, pa!, P);
    nodes.push(c);
    await c.cluster.whenUp();
    await eventually(() => new Set(a.service.table()?.owners).size === 3, { what: "A's table over three" });
    await eventually(() => unauthorized() >= 1, { what: "A's messages refused by B" });
    expect(new Set(b.service.table()!.owners).size).toBe(2);
    // B catches up with the membership; A's allocator sends the table again to who did not ack
    installMembershipAuthority(types, () => b.cluster.state().membership);
    await eventually(() => new Set(b.service.table()?.owners).size === 3, {
      what: 'the table adopted by B once it knows its sender',
    });
    expect(b.service.table()).toEqual(a.service.table());
  });
});
