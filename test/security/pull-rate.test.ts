import { afterEach, describe, expect, it } from 'vitest';
import type { ClusterConfig } from '../../packages/cluster/src/index.js';
import { type Message, TokenBuckets } from '../../packages/core/src/index.js';
import { type ClusterNode, freePorts, startClusterNode } from '../support/cluster-nodes.js';
import { eventually } from '../support/wait.js';

const running: ClusterNode[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((n) => n.transport.close()));
});

const PULLS = 3000;

/**
 * A member gone rogue: from its own node (so over its own authenticated connection) it sends
 * the coordinator `PULLS` pulls claiming version 0, each asking for the whole membership back,
 * and counts the memberships it is sent. Returns that count once the coordinator has handled them.
 */
async function pullLoop(config: Partial<ClusterConfig>) {
  const [portA, portB] = (await freePorts(2)) as [number, number];
  const seeds = [{ host: '127.0.0.1', port: portA }];
  const a = await startClusterNode(portA, seeds, config);
  running.push(a);
  await a.cluster.whenUp();
  const b = await startClusterNode(portB, seeds, config);
  running.push(b);
  await b.cluster.whenUp();
  await eventually(
    () => a.cluster.state().membership?.members.filter((m) => m.status === 'up').length === 2,
    {
      what: 'both up',
    },
  );
  const rogue = b.transport.system;
  let memberships = 0;
  const sink = rogue.functionRef('pull-sink', (m: Message) => {
    if (m.type === 'membership.update') memberships++;
  });
  const coordinator = rogue.remoteRef(a.transport.system.node, '/system/membership');
  for (let i = 0; i < PULLS; i++)
    coordinator.send({ type: 'membership.pull', version: 0, replyTo: sink } as Message);
  const limited = () =>
    a.transport.system.metrics.value('doyen_remote_rate_limited_total', { type: 'membership.pull' });
  // every pull was either answered or dropped at the boundary
  await eventually(() => memberships + limited() >= PULLS, { what: 'every pull handled', timeoutMs: 20_000 });
  return { memberships, limited: limited() };
}

describe('issue 25 (3): membership.pull is rate-limited per peer', () => {
  it('a member pulling in a loop gets a few memberships a second, the rest is dropped and counted', async () => {
    const { memberships, limited } = await pullLoop({ pullsPerPeerPerSecond: 10 });
    console.log(JSON.stringify({ memberships, limited }));
    // a burst of 10, then 10 a second for the few seconds the loop takes
    expect(memberships).toBeGreaterThan(0);
    expect(memberships).toBeLessThan(100);
    expect(limited).toBeGreaterThan(PULLS - 100);
  }, 30_000);

  it('positive control: without the limit every pull is answered with a whole membership', async () => {
    const { memberships, limited } = await pullLoop({ pullsPerPeerPerSecond: Number.POSITIVE_INFINITY });
    expect(limited).toBe(0);
    expect(memberships).toBe(PULLS);
  }, 30_000);
});

describe('the token buckets behind it', () => {
  it('spend a burst, then refill at the rate on the clock they are given (simulations replay)', () => {
    let now = 1000;
    const buckets = new TokenBuckets(10, () => now);
    const taken = () => Array.from({ length: 20 }, () => buckets.take('peer')).filter(Boolean).length;
    expect(taken()).toBe(10);
    now += 300;
    expect(taken()).toBe(3);
    expect(buckets.take('other')).toBe(true);
    now += 10_000;
    expect(taken()).toBe(10);
  });

  it('stay bounded when peers come and go', () => {
    let now = 0;
    const buckets = new TokenBuckets(5, () => now, 64);
    for (let i = 0; i < 10_000; i++) {
      buckets.take(`peer-${i}`);
      now += 1;
    }
    expect(buckets.size).toBeLessThanOrEqual(64);
  });
});
