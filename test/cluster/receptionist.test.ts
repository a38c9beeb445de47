import { afterEach, describe, expect, it } from 'vitest';
import { Receptionist } from '../../packages/cluster/src/index.js';
import type { ActorRef } from '../../packages/core/src/index.js';
import { type ClusterNode, freePorts, startClusterNode, startUpCluster } from '../support/cluster-nodes.js';
import { Inbox, inbox } from '../support/inbox-service.js';
import { eventually } from '../support/wait.js';

const nodes: ClusterNode[] = [];
afterEach(async () => {
  await Promise.all(nodes.splice(0).map((n) => n.transport.close(0)));
});

/** Three up members, each with a receptionist; members are downed by hand. */
async function cluster() {
  const up = await startUpCluster([{}, {}, {}], nodes, { downing: 'manual' });
  return up.map((n) => {
    n.transport.system.messageTypes.register(['hello', 'hi']);
    return { ...n, receptionist: Receptionist.start(n.transport.system, n.cluster) };
  });
}
const addresses = (refs: readonly ActorRef[]) => refs.map((r) => `${r.address.node.port}${r.path}`).sort();

describe('receptionist across real sockets', () => {
  it('finds, subscribes and asks across members; entries leave when their actor stops and when their node is downed', async () => {
    const [a, b, c] = await cluster();
    const heard: string[][] = [];
    a!.receptionist.subscribe(Inbox, (refs) => heard.push(addresses(refs)));
    const onB = b!.transport.system.spawn(inbox, {
      name: 'inbox',
      inputFrom: ({ self }) => ({ at: self.id }),
    });
    const onC = c!.transport.system.spawn(inbox, {
      name: 'inbox',
      inputFrom: ({ self }) => ({ at: self.id }),
    });
    b!.receptionist.register(Inbox, onB);
    c!.receptionist.register(Inbox, onC);
    const both = [`${b!.transport.port}/user/inbox`, `${c!.transport.port}/user/inbox`].sort();
    await eventually(async () => addresses(await a!.receptionist.find(Inbox)).join() === both.join(), {
      what: 'both inboxes listed on a',
    });
    expect(heard[0]).toEqual([]); // the first listing, before anything was registered
    expect(heard.at(-1)).toEqual(both);
    // a found ref is a working ref to the member's actor
    const [first] = await a!.receptionist.find(Inbox);
    const reply = await first!.ask<{ type: 'hi'; from: string }>((replyTo) => ({ type: 'hello', replyTo }));
    expect(reply.from).toBe(first!.id);

    // the actor stops: its entry leaves everywhere
    b!.transport.system.stop(onB);
    await eventually(async () => addresses(await c!.receptionist.find(Inbox)).length === 1, {
      what: "b's inbox gone from c",
    });
    expect(heard.at(-1)).toEqual([`${c!.transport.port}/user/inbox`]);

    // positive control: until c is downed, b still lists c's inbox; then it leaves with its node
    expect(addresses(await b!.receptionist.find(Inbox))).toEqual([`${c!.transport.port}/user/inbox`]);
    a!.cluster.down(c!.cluster.self.key);
    await eventually(async () => (await b!.receptionist.find(Inbox)).length === 0, {
      what: "c's entries gone from b after its downing",
    });
    await eventually(() => heard.at(-1)?.length === 0, { what: "a's subscriber told" });
  });

  it('a member that comes up later hears the registrations made before it joined', async () => {
    const [a] = await cluster();
    const onA = a!.transport.system.spawn(inbox, {
      name: 'inbox',
      inputFrom: ({ self }) => ({ at: self.id }),
    });
    a!.receptionist.register(Inbox, onA);
    const [port] = await freePorts(1);
    const late = await startClusterNode(port!, [{ host: '127.0.0.1', port: a!.transport.port }], {
      downing: 'manual',
    });
    nodes.push(late);
    const receptionist = Receptionist.start(late.transport.system, late.cluster);
    await late.cluster.whenUp();
    await eventually(
      async () => addresses(await receptionist.find(Inbox)).join() === `${a!.transport.port}/user/inbox`,
      {
        what: "the late member hears a's registration",
      },
    );
  });
});
