import { afterEach, describe, expect, it } from 'vitest';
import { type ClusterNode, freePorts, startClusterNode, viewOf } from '../support/cluster-nodes.js';
import { eventually } from '../support/wait.js';

const running: ClusterNode[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((n) => n.transport.close()));
});

describe('membership over real WebSockets on 127.0.0.1', () => {
  it('five nodes join through the first seed, agree, and the next oldest takes over when the coordinator dies', async () => {
    const ports = await freePorts(5);
    const seeds = [{ host: '127.0.0.1', port: ports[0]! }];
    for (const port of ports) running.push(await startClusterNode(port, seeds));
    await Promise.all(running.map((n) => n.cluster.whenUp()));
    await eventually(
      () =>
        running.every(
          (n) => n.cluster.state().membership?.members.filter((m) => m.status === 'up').length === 5,
        ),
      { what: 'five up members everywhere' },
    );
    const views = new Set(running.map(viewOf));
    expect(views.size).toBe(1);
    const [first, second] = running;
    expect(first!.cluster.state().isCoordinator).toBe(true);
    const ages = first!.cluster
      .state()
      .membership!.members.map((m) => m.age)
      .sort();
    expect(ages).toEqual([1, 2, 3, 4, 5]);

    // crash the coordinator: no leave, sockets just go away
    await first!.transport.close();
    running.shift();
    const survivors = running;
    await eventually(
      () =>
        survivors.every(
          (n) =>
            n.cluster.state().coordinator?.address === second!.cluster.self.address &&
            n.cluster.state().membership?.members.length === 4,
        ),
      { what: 'the next oldest to coordinate', timeoutMs: 15_000 },
    );
    expect(new Set(survivors.map(viewOf)).size).toBe(1);
    expect(second!.cluster.state().membership!.failed.map((m) => m.address)).toContain(
      first!.cluster.self.address,
    );
  });
});
