import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { type ConsoleHost, ConsoleService } from '../../packages/doyen/src/console/console-service.js';
import { freePorts } from '../support/cluster-nodes.js';
import { countSubscribes } from '../support/console-subscribes.js';
import { nodesClosedAfterEach, startLocalNode, startMemberNode } from '../support/doyen-nodes.js';
import { eventually } from '../support/wait.js';

/**
 * A serving node asks its members to keep sending when gathering starts and once per renewal
 * period; a membership change asks only members it has not asked yet (issue 30: at 50 nodes
 * every change — a leave is three — sent 49 subscriptions from the step that logged it, and
 * woke every member to build its view, while the change's own frame waited for a CPU).
 * Control: the member that joined is asked, so the count sees the subscriptions sent.
 */
const nodes = nodesClosedAfterEach();
const services: ConsoleService[] = [];
afterEach(() => {
  for (const s of services.splice(0)) s.close();
});

describe('console subscriptions on a membership change', () => {
  it('a change asks only the new member; the members already asked are left to the renewal', async () => {
    const secret = randomBytes(16).toString('hex');
    const cluster = `console-renew-${randomBytes(3).toString('hex')}`;
    // the node's own console is off: the service under test is this one, renewing once a minute
    const a = await startLocalNode({ cluster, secret, console: { enabled: false } }, {}, nodes);
    const [pb, pc] = await freePorts(2);
    const b = await startMemberNode(pb!, a.port, { cluster, secret }, {}, nodes);
    const up = (n: number) =>
      a.node.cluster.state().membership?.members.filter((m) => m.status === 'up').length === n;
    await eventually(() => up(2), { what: '2 up members' });

    const counts = countSubscribes(a.node);
    const service = new ConsoleService(a.node as unknown as ConsoleHost, undefined, { renewMs: 60_000 });
    services.push(service);
    service.touch();
    const bAddress = `127.0.0.1:${pb}`;
    expect(counts.get(bAddress)).toBe(1);

    // a third member joins: several membership changes on the serving node
    await startMemberNode(pc!, a.port, { cluster, secret }, {}, nodes);
    await eventually(() => up(3), { what: '3 up members' });
    const cAddress = `127.0.0.1:${pc}`;
    expect(counts.get(cAddress)).toBe(1);
    expect(counts.get(bAddress)).toBe(1);

    // b leaves: more changes, no new member, nothing asked
    await b.cluster.leave();
    await eventually(() => !a.node.cluster.state().membership?.members.some((m) => m.address === bAddress), {
      what: 'b gone from the membership',
    });
    expect(counts.get(cAddress)).toBe(1);
    expect(counts.get(bAddress)).toBe(1);
  }, 30_000);
});
