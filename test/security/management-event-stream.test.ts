// GET /cluster/events from outside: a page of another site is refused (it could not read the
// stream, but it could hold the server's places), and streams held by someone else never lock
// the operator out: a fresh same-origin request is always served, an older stream closed.
import { type IncomingHttpHeaders, request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type DoyenNode,
  MAX_EVENT_STREAMS,
  MAX_EVENT_STREAMS_PER_CLIENT,
} from '../../packages/doyen/src/index.js';
import { captureLogger } from '../../packages/testkit/src/index.js';
import { startLocalNode } from '../support/doyen-nodes.js';
import { eventually } from '../support/wait.js';

const nodes: DoyenNode[] = [];
const streams: EventStream[] = [];
afterEach(async () => {
  for (const s of streams.splice(0)) s.close();
  await Promise.all(nodes.splice(0).map((n) => n.close()));
});

async function start(lines?: string[]): Promise<{ node: DoyenNode; httpPort: number }> {
  const { node, httpPort } = await startLocalNode(
    { cluster: 'events-guard', clusterOptions: { downing: 'manual' } },
    lines ? { logger: captureLogger(lines, Date.now, 'info') } : {},
    nodes,
  );
  await eventually(() => node.cluster.state().status === 'up', { what: 'the node up' });
  return { node, httpPort };
}

interface EventStream {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  /** Everything the server sent so far. */
  text(): string;
  /** True once the server ended or dropped the stream. */
  ended(): boolean;
  close(): void;
}

/** A raw GET of the event stream from `from` (a loopback address), exactly the headers given. */
function openStream(
  httpPort: number,
  from: string,
  headers: Record<string, string> = {},
  path = '/cluster/events',
): Promise<EventStream> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1',
      port: httpPort,
      path,
      localAddress: from,
      headers,
      agent: false,
    });
    req.once('error', reject);
    req.once('response', (res) => {
      let text = '';
      let ended = false;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
      });
      const end = () => {
        ended = true;
      };
      res.once('end', end);
      res.once('close', end);
      res.once('error', end);
      const stream: EventStream = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        text: () => text,
        ended: () => ended,
        close: () => req.destroy(),
      };
      streams.push(stream);
      resolve(stream);
    });
    req.end();
  });
}

async function evictedCount(node: DoyenNode, reason: string): Promise<number> {
  return node.system.metrics.value('doyen_http_event_streams_evicted_total', { reason }) ?? 0;
}

describe('GET /cluster/events refuses cross-site requests (management-guard.ts)', () => {
  it('a page of another site, or of an origin not allowed, gets 403 and no stream', async () => {
    const { httpPort } = await start();
    for (const headers of [
      { 'sec-fetch-site': 'cross-site' } as Record<string, string>,
      { origin: 'https://evil.example' },
      { origin: 'http://127.0.0.1:1' },
    ]) {
      for (const path of ['/cluster/events', '/cluster/domain-events']) {
        const refused = await openStream(httpPort, '127.0.0.1', headers, path);
        expect(refused.status).toBe(403);
        expect(refused.headers['content-type']).toMatch(/json/);
        await eventually(() => refused.ended(), { what: 'the refusal ended' });
        expect(refused.text()).not.toContain('MemberUp');
      }
    }
    // a DNS-rebound page names the attacker's host: refused as for every route on loopback
    const rebound = await openStream(httpPort, '127.0.0.1', { host: `evil.example:${httpPort}` });
    expect(rebound.status).toBe(403);
  });

  it('positive control: the same origin, a same-site page, and curl (no browser headers) get the stream', async () => {
    const { httpPort } = await start();
    for (const headers of [
      { origin: `http://127.0.0.1:${httpPort}`, 'sec-fetch-site': 'same-origin' } as Record<string, string>,
      { origin: `http://localhost:${httpPort}` },
      { 'sec-fetch-site': 'same-site' },
      {},
    ]) {
      const served = await openStream(httpPort, '127.0.0.1', headers);
      expect(served.status).toBe(200);
      expect(served.headers['content-type']).toMatch(/text\/event-stream/);
      await eventually(() => served.text().includes('event: MemberUp'), { what: 'the current state' });
    }
  });
});

describe('held event streams never lock the operator out (event-stream-slots.ts)', () => {
  it(`${MAX_EVENT_STREAMS} streams held from other addresses: the operator's fresh request is served, one of theirs closed`, async () => {
    const lines: string[] = [];
    const { node, httpPort } = await start(lines);
    // positive control: the holder takes every place the server has (two addresses, a share each)
    const held: EventStream[] = [];
    for (const from of ['127.0.0.2', '127.0.0.3'])
      for (let i = 0; i < MAX_EVENT_STREAMS_PER_CLIENT; i++) held.push(await openStream(httpPort, from));
    expect(held).toHaveLength(MAX_EVENT_STREAMS);
    expect(held.every((s) => s.status === 200)).toBe(true);
    await eventually(() => held.every((s) => s.text().includes('MemberUp')), {
      what: 'every held stream served',
    });
    expect(held.some((s) => s.ended())).toBe(false);

    const operator = await openStream(httpPort, '127.0.0.1', { 'sec-fetch-site': 'same-origin' });
    expect(operator.status).toBe(200);
    await eventually(() => operator.text().includes('event: MemberUp'), { what: "the operator's stream" });
    // the oldest stream of a heaviest holder made room
    await eventually(() => held[0]!.ended(), { what: 'the oldest held stream closed' });
    expect(held[0]!.text()).toContain('closed to serve a newer stream (total-cap)');
    expect(held.filter((s) => s.ended())).toHaveLength(1);
    expect(await evictedCount(node, 'total-cap')).toBe(1);
    await eventually(() => lines.some((l) => l.includes('"event":"http.events-evicted"')), {
      what: 'the eviction logged',
    });

    // the holder cannot take the operator's place back: a new stream of theirs closes their own
    for (let i = 0; i < 2 * MAX_EVENT_STREAMS; i++) held.push(await openStream(httpPort, '127.0.0.2'));
    await eventually(() => held.filter((s) => !s.ended()).length === MAX_EVENT_STREAMS - 1, {
      what: "the holder's streams back to their share",
    });
    await new Promise((r) => setTimeout(r, 100));
    expect(operator.ended()).toBe(false);
    expect(await evictedCount(node, 'client-cap')).toBeGreaterThan(0);
  });

  it('from the operator’s own address, a fresh request is still served: the oldest stream of that address is closed', async () => {
    const { httpPort } = await start();
    const held: EventStream[] = [];
    for (let i = 0; i < MAX_EVENT_STREAMS_PER_CLIENT; i++) held.push(await openStream(httpPort, '127.0.0.1'));
    expect(held.every((s) => s.status === 200)).toBe(true);
    const operator = await openStream(httpPort, '127.0.0.1');
    expect(operator.status).toBe(200);
    await eventually(() => operator.text().includes('event: MemberUp'), { what: "the operator's stream" });
    await eventually(() => held[0]!.ended(), { what: 'the oldest stream of the address closed' });
    expect(held.slice(1).some((s) => s.ended())).toBe(false);
    expect(held[0]!.text()).toContain('(client-cap)');
  });
});
