import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  type ClusterMembersView,
  MAX_EVENT_STREAMS_PER_CLIENT,
  selectedEventTypes,
} from '../../packages/doyen/src/index.js';
import { freePorts } from '../support/cluster-nodes.js';
import { nodesClosedAfterEach, startMemberNode } from '../support/doyen-nodes.js';
import { eventually } from '../support/wait.js';

const nodes = nodesClosedAfterEach();

const TOKEN = randomBytes(16).toString('hex');
const CLUSTER = 'members-api';

async function start(port: number, httpPort: number, seed: number, roles: string[] = []) {
  return startMemberNode(
    port,
    seed,
    {
      cluster: CLUSTER,
      httpPort,
      roles,
      secret: 's',
      httpToken: TOKEN,
      clusterOptions: { downing: 'manual' },
    },
    {},
    nodes,
  );
}

const uri = (port: number) => `doyen://${CLUSTER}@127.0.0.1:${port}`;

async function get(httpPort: number, path: string) {
  const r = await fetch(`http://127.0.0.1:${httpPort}${path}`);
  return { status: r.status, body: (await r.json()) as any };
}

async function change(
  httpPort: number,
  path: string,
  method: 'PUT' | 'DELETE',
  body?: unknown,
  token = TOKEN,
) {
  const r = await fetch(`http://127.0.0.1:${httpPort}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: r.status, body: (await r.json()) as any };
}

/** Reads server-sent events from a stream until `until` holds for what arrived. */
async function readEvents(
  httpPort: number,
  query: string,
  until: (events: { event: string; data: any }[]) => boolean,
  during: () => Promise<void> = async () => {},
) {
  const controller = new AbortController();
  const response = await fetch(`http://127.0.0.1:${httpPort}/cluster/events${query}`, {
    signal: controller.signal,
  });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  const events: { event: string; data: any }[] = [];
  let buffer = '';
  const deadline = Date.now() + 10_000;
  // the stream is open and the current state written: now change the cluster
  const acting = during();
  try {
    while (!until(events)) {
      if (Date.now() > deadline) throw new Error(`events so far: ${JSON.stringify(events)}`);
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let end = buffer.indexOf('\n\n');
      while (end >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event = /^event: (.*)$/m.exec(block)?.[1];
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (event && data) events.push({ event, data: JSON.parse(data) });
        end = buffer.indexOf('\n\n');
      }
    }
  } finally {
    controller.abort();
  }
  await acting;
  return events;
}

describe('Akka-Management-compatible members API', () => {
  it('GET /cluster/members and /cluster/members/{address} in Akka Management’s shape', async () => {
    const [p1, p2, p3, h1, h2, h3] = await freePorts(6);
    const first = await start(p1!, h1!, p1!, ['frontend']);
    await start(p2!, h2!, p1!, ['backend']);
    await start(p3!, h3!, p1!, ['backend', 'frontend']);
    const view = await eventually(
      async () => {
        const v = (await get(h2!, '/cluster/members')).body as ClusterMembersView;
        return v.members.length === 3 && v.members.every((m) => m.status === 'Up') && v;
      },
      { what: 'three members up' },
    );
    expect(view.selfNode).toBe(uri(p2!));
    expect(view.leader).toBe(uri(p1!));
    expect(view.oldest).toBe(uri(p1!));
    expect(view.oldestPerRole).toEqual({ frontend: uri(p1!), backend: uri(p2!) });
    expect(view.unreachable).toEqual([]);
    expect(view.members).toContainEqual({
      node: uri(p1!),
      nodeUid: first.system.node.uid,
      status: 'Up',
      roles: ['frontend'],
    });

    // one member, named as Akka names it (with or without the scheme) or as doyen does
    for (const name of [uri(p3!), `${CLUSTER}@127.0.0.1:${p3}`, `127.0.0.1:${p3}`]) {
      const one = await get(h1!, `/cluster/members/${encodeURIComponent(name)}`);
      expect(one.status, name).toBe(200);
      expect(one.body).toMatchObject({ node: uri(p3!), status: 'Up', roles: ['backend', 'frontend'] });
    }
    const key = `127.0.0.1:${p1}#${first.system.node.uid}`;
    expect((await get(h3!, `/cluster/members/${encodeURIComponent(key)}`)).body.node).toBe(uri(p1!));
    // another cluster's member, an unknown one, a wrong uid: 404 with Akka's message
    for (const name of [`doyen://other@127.0.0.1:${p3}`, '127.0.0.1:1', `127.0.0.1:${p1}#nope`]) {
      const missing = await get(h1!, `/cluster/members/${encodeURIComponent(name)}`);
      expect(missing.status, name).toBe(404);
      expect(missing.body.message).toMatch(/^Member \[.*\] not found$/);
    }
    expect((await get(h1!, '/cluster/members/%E0%A4%A')).status).toBe(400);
    // the existing routes stay
    expect((await get(h1!, '/cluster')).body.members).toHaveLength(3);
  });

  it('lists a crashed member as unreachable with its observers, and downs it on PUT {operation: Down}', async () => {
    const [p1, p2, p3, h1, h2] = await freePorts(5);
    await start(p1!, h1!, p1!);
    await start(p2!, h2!, p1!);
    const third = await start(p3!, 0, p1!);
    await eventually(async () => (await get(h1!, '/cluster/members')).body.members.length === 3);
    third.transport.system.terminate();
    const unreachable = await eventually(
      async () => {
        const v = (await get(h1!, '/cluster/members')).body as ClusterMembersView;
        const entry = v.unreachable.find((u) => u.node === uri(p3!));
        return entry && entry.observedBy.length > 0 && entry;
      },
      { what: 'the crashed member unreachable' },
    );
    for (const observer of unreachable.observedBy) expect([uri(p1!), uri(p2!)]).toContain(observer);

    const path = `/cluster/members/${encodeURIComponent(uri(p3!))}`;
    // a state change needs the token (the guard runs first) and a known operation
    expect((await change(h2!, path, 'PUT', { operation: 'Down' }, 'wrong')).status).toBe(401);
    const refused = await fetch(`http://127.0.0.1:${h2}${path}`, { method: 'PUT', body: 'operation=Down' });
    expect(refused.status).toBe(401);
    expect((await change(h2!, path, 'PUT', { operation: 'Explode' })).status).toBe(400);
    expect((await change(h2!, path, 'PUT', {})).status).toBe(400);
    expect((await change(h2!, path, 'PUT', null)).status).toBe(400);
    const down = await change(h2!, path, 'PUT', { operation: 'Down' });
    expect(down).toEqual({ status: 200, body: { message: `Downing ${uri(p3!)}` } });
    await eventually(
      async () => {
        const v = (await get(h1!, '/cluster/members')).body as ClusterMembersView;
        return !v.members.some((m) => m.node === uri(p3!) && m.status === 'Up') && v.unreachable.length === 0;
      },
      { what: 'the downed member gone from the view' },
    );
  });

  it('leaves only the node that serves DELETE (a leave is never forwarded)', async () => {
    const [p1, p2, h1, h2] = await freePorts(4);
    await start(p1!, h1!, p1!);
    const second = await start(p2!, h2!, p1!);
    await eventually(async () => (await get(h1!, '/cluster/members')).body.members.length === 2);
    const other = await change(h1!, `/cluster/members/${encodeURIComponent(uri(p2!))}`, 'DELETE');
    expect(other.status).toBe(400);
    expect(other.body.message).toContain('leaves only itself');
    const self = await change(h2!, `/cluster/members/${encodeURIComponent(uri(p2!))}`, 'DELETE');
    expect(self).toEqual({ status: 200, body: { message: `Leaving ${uri(p2!)}` } });
    expect(await second.closed).toBe('shutdown');
    await eventually(async () => (await get(h1!, '/cluster/members')).body.members.length === 1);
  });

  it('streams cluster events as server-sent events: the current state first, then changes, filtered by type', async () => {
    const [p1, p2, p3, h1] = await freePorts(4);
    await start(p1!, h1!, p1!);
    await start(p2!, 0, p1!);
    await eventually(async () => {
      const v = (await get(h1!, '/cluster/members')).body as ClusterMembersView;
      return v.members.length === 2 && v.members.every((m) => m.status === 'Up');
    });

    const events = await readEvents(
      h1!,
      '',
      (es) => es.some((e) => e.event === 'MemberUp' && e.data.member.uniqueAddress.address === uri(p3!)),
      async () => {
        await start(p3!, 0, p1!);
      },
    );
    // the current state as events: both members up, then the leader
    expect(events.slice(0, 3).map((e) => e.event)).toEqual(['MemberUp', 'MemberUp', 'LeaderChanged']);
    expect(events[2]!.data).toEqual({ address: uri(p1!), type: 'LeaderChanged' });
    expect(events[0]!.data).toMatchObject({
      type: 'MemberUp',
      member: { status: 'Up', roles: [], uniqueAddress: { address: uri(p1!) } },
    });
    // then the third node's join as it happens
    const joined = events.findIndex((e) => e.event === 'MemberJoined');
    expect(joined).toBeGreaterThan(2);
    expect(events[joined]!.data.member.uniqueAddress.address).toBe(uri(p3!));

    // ?type=ReachabilityEvent&type=MemberRemoved: a crash gives UnreachableMember, the down MemberRemoved
    const third = nodes[2]!;
    const filtered = await readEvents(
      h1!,
      '?type=ReachabilityEvent&type=MemberRemoved',
      (es) => es.some((e) => e.event === 'MemberRemoved'),
      async () => {
        third.transport.system.terminate();
        await eventually(async () => {
          const v = (await get(h1!, '/cluster/members')).body as ClusterMembersView;
          return v.unreachable.length === 1;
        });
        await change(h1!, `/cluster/members/${encodeURIComponent(uri(p3!))}`, 'PUT', { operation: 'down' });
      },
    );
    expect(filtered.map((e) => e.event)).toEqual(['UnreachableMember', 'MemberRemoved']);
    expect(filtered[1]!.data).toMatchObject({ previousStatus: 'Up', member: { status: 'Removed' } });
  });

  it('follows the node into its next incarnation after a downing', async () => {
    const [p1, p2, h1, h2] = await freePorts(4);
    await start(p1!, h1!, p1!);
    const second = await start(p2!, h2!, p1!);
    await eventually(async () => (await get(h1!, '/cluster/members')).body.members.length === 2);
    const oldUid = second.system.node.uid;
    const events = await readEvents(
      h2!,
      '?type=MemberUp',
      (es) =>
        es.some(
          (e) =>
            e.data.member.uniqueAddress.longUid !== oldUid &&
            e.data.member.uniqueAddress.address === uri(p2!),
        ),
      async () => {
        await change(h1!, `/cluster/members/${encodeURIComponent(uri(p2!))}`, 'PUT', { operation: 'Down' });
      },
    );
    expect(second.incarnations).toBe(2);
    expect(events.at(-1)!.data.member.uniqueAddress.longUid).toBe(second.system.node.uid);
  });

  it(`serves at most ${MAX_EVENT_STREAMS_PER_CLIENT} event streams to one client: a newer one closes its oldest`, async () => {
    const [p1, h1] = await freePorts(2);
    await start(p1!, h1!, p1!);
    const controller = new AbortController();
    try {
      const open = await Promise.all(
        Array.from({ length: MAX_EVENT_STREAMS_PER_CLIENT }, () =>
          fetch(`http://127.0.0.1:${h1}/cluster/events`, { signal: controller.signal }),
        ),
      );
      expect(open.every((r) => r.status === 200)).toBe(true);
      const first = open[0]!.body!.getReader();
      const newer = await fetch(`http://127.0.0.1:${h1}/cluster/events`, { signal: controller.signal });
      expect(newer.status).toBe(200);
      // the oldest ends (its reader reaches the end); the newcomer streams
      let text = '';
      for (;;) {
        const { done, value } = await first.read();
        if (done) break;
        text += new TextDecoder().decode(value);
      }
      expect(text).toContain('closed to serve a newer stream (client-cap)');
    } finally {
      controller.abort();
    }
  });

  it('refuses unknown event types and wrong methods', async () => {
    const [p1, h1] = await freePorts(2);
    await start(p1!, h1!, p1!);
    const bad = await get(h1!, '/cluster/events?type=MemberExploded');
    expect(bad.status).toBe(400);
    expect(bad.body.message).toContain('MemberExploded');
    expect(selectedEventTypes(['MemberEvent'])).toMatchObject({ ok: true });
    expect(
      selectedEventTypes(['ClusterDomainEvent']).ok && selectedEventTypes(['ClusterDomainEvent']),
    ).toBeTruthy();
    const post = await fetch(`http://127.0.0.1:${h1}/cluster/members`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(post.status).toBe(405);
  });
});
