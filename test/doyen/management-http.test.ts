import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { freePorts } from '../support/cluster-nodes.js';
import { nodesClosedAfterEach, startMemberNode } from '../support/doyen-nodes.js';
import { eventually } from '../support/wait.js';

const nodes = nodesClosedAfterEach();

const TOKEN = randomBytes(16).toString('hex');

async function start(port: number, httpPort: number, seed: number, extra = {}) {
  return startMemberNode(
    port,
    seed,
    {
      cluster: 'http-test',
      httpPort,
      secret: 's',
      httpToken: TOKEN,
      clusterOptions: { downing: 'manual' },
      ...extra,
    },
    {},
    nodes,
  );
}

/** GET, or any other method as an operator sends it: with the management token, JSON. */
const http = (port: number, path: string, method = 'GET') =>
  fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    ...(method === 'GET'
      ? {}
      : { headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: '{}' }),
  }).then(async (r) => ({
    status: r.status,
    body: (await r.json()) as any,
  }));

describe('HTTP management', () => {
  it('serves /cluster and health, refuses unknown routes and methods, downs and leaves on POST', async () => {
    const [p1, p2, p3, h1, h2, h3] = await freePorts(6);
    await start(p1!, h1!, p1!);
    await start(p2!, h2!, p1!, { name: 'second' });
    const third = await start(p3!, h3!, p1!);
    // every node up in the second node's view (a joiner is `joining` for a moment)
    await eventually(async () => {
      const members = (await http(h2!, '/cluster')).body.members as { status: string }[];
      return members.length === 3 && members.every((m) => m.status === 'up');
    });
    const view = (await http(h2!, '/cluster')).body;
    expect(view).toMatchObject({ self: `127.0.0.1:${p2}`, coordinator: `127.0.0.1:${p1}`, status: 'up' });
    expect(view.members.map((m: { age: number }) => m.age).sort()).toEqual([1, 2, 3]);
    expect(view.members.find((m: { name: string }) => m.name === 'second')).toMatchObject({
      status: 'up',
      reachable: true,
    });
    expect((await http(h1!, '/health/ready')).status).toBe(200);
    expect((await http(h1!, '/health/alive')).body).toEqual({ alive: true });
    expect((await http(h1!, '/nope')).status).toBe(404);
    expect((await http(h1!, '/cluster', 'DELETE')).status).toBe(405);
    expect((await http(h1!, '/cluster/down/10.9.9.9:1', 'POST')).status).toBe(404);

    // manual downing: an operator downs the third node through any member
    third.transport.system.terminate();
    expect((await http(h2!, `/cluster/down/127.0.0.1:${p3}`, 'POST')).status).toBe(202);
    await eventually(
      async () => {
        const members = (await http(h1!, '/cluster')).body.members as { address: string; status: string }[];
        return members.find((m) => m.address === `127.0.0.1:${p3}`)?.status === 'down';
      },
      { what: 'the third node downed' },
    );

    // POST /cluster/leave: the second node leaves gracefully and closes
    expect((await http(h2!, '/cluster/leave', 'POST')).status).toBe(202);
    await eventually(
      async () =>
        (await http(h1!, '/cluster')).body.members.every((m: { name: string }) => m.name !== 'second'),
      {
        what: 'the second node removed',
      },
    );
    const second = nodes[1]!;
    expect(await second.closed).toBe('shutdown');
  });
});

describe('a downed node', () => {
  it('restarts as a new incarnation that rejoins through the members it knew (onDowned: restart)', async () => {
    const [p1, p2, p3, h1] = await freePorts(4);
    await start(p1!, h1!, p1!);
    await start(p2!, 0, p1!);
    const third = await start(p3!, 0, p1!);
    await eventually(async () => (await http(h1!, '/cluster')).body.members.length === 3);
    const oldUid = third.system.node.uid;
    await http(h1!, `/cluster/down/127.0.0.1:${p3}`, 'POST');
    await eventually(
      async () => {
        const members = (await http(h1!, '/cluster')).body.members as {
          address: string;
          uid: string;
          status: string;
          age: number;
        }[];
        const back = members.find((m) => m.address === `127.0.0.1:${p3}` && m.status === 'up');
        return back !== undefined && back.uid !== oldUid && back.age === 4;
      },
      { timeoutMs: 15_000, what: 'the new incarnation to be up' },
    );
    expect(third.incarnations).toBe(2);
    expect(third.system.node.uid).not.toBe(oldUid);
  });

  it('stops with reason downed when onDowned is exit (the CLI exits 4)', async () => {
    const [p1, p2, h1] = await freePorts(3);
    await start(p1!, h1!, p1!);
    const second = await start(p2!, 0, p1!, { onDowned: 'exit' });
    await eventually(async () => (await http(h1!, '/cluster')).body.members.length === 2);
    await http(h1!, `/cluster/down/127.0.0.1:${p2}`, 'POST');
    expect(await second.closed).toBe('downed');
  });
});
