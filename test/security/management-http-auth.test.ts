import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import type { DoyenNode, NodeConfig } from '../../packages/doyen/src/index.js';
import { captureLogger } from '../../packages/testkit/src/index.js';
import { freePorts } from '../support/cluster-nodes.js';
import { nodesClosedAfterEach, startMemberNode } from '../support/doyen-nodes.js';
import { eventually } from '../support/wait.js';

const SECRET = randomBytes(16).toString('hex');
const TOKEN = randomBytes(16).toString('hex');

const nodes = nodesClosedAfterEach();

async function start(
  port: number,
  httpPort: number,
  seed: number,
  extra: Partial<NodeConfig> = {},
  lines?: string[],
): Promise<DoyenNode> {
  return startMemberNode(
    port,
    seed,
    { cluster: 'mgmt-auth', httpPort, secret: SECRET, clusterOptions: { downing: 'manual' }, ...extra },
    lines ? { logger: captureLogger(lines, Date.now, 'info') } : {},
    nodes,
  );
}

/** A raw POST: exactly the headers given, a body the way a form would send it. */
async function post(
  httpPort: number,
  path: string,
  headers: Record<string, string>,
  body = '{}',
): Promise<{ status: number; body: any; headers: Headers }> {
  const r = await fetch(`http://127.0.0.1:${httpPort}${path}`, { method: 'POST', headers, body });
  return { status: r.status, body: await r.json(), headers: r.headers };
}

const operator = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };

async function members(httpPort: number): Promise<{ address: string; status: string }[]> {
  const r = await fetch(`http://127.0.0.1:${httpPort}/cluster`);
  return ((await r.json()) as { members: { address: string; status: string }[] }).members;
}

async function refusedCount(httpPort: number, reason: string): Promise<number> {
  const text = await fetch(`http://127.0.0.1:${httpPort}/metrics`).then((r) => r.text());
  const line = text.split('\n').find((l) => l.startsWith(`doyen_http_refused_total{reason="${reason}"}`));
  return line ? Number(line.split(' ')[1]) : 0;
}

const stillUp = (node: DoyenNode) => node.cluster.state().status === 'up';

describe('management HTTP: cross-site requests', () => {
  it('a cross-site text/plain POST /cluster/leave (no preflight) is refused and the node stays up; the operator request makes it leave', async () => {
    const [p, h] = await freePorts(2);
    const lines: string[] = [];
    const node = await start(p!, h!, p!, { httpToken: TOKEN }, lines);
    let closed = false;
    void node.closed.then(() => (closed = true));

    // what a web page's <form> or fetch(..., { mode: 'no-cors' }) sends: no preflight happens
    const attack = await post(
      h!,
      '/cluster/leave',
      { 'content-type': 'text/plain', origin: 'http://evil.example', 'sec-fetch-site': 'cross-site' },
      'x',
    );
    expect(attack.status).toBe(403);
    // the same without the fetch metadata header (older browsers): the Origin alone refuses it
    const attackOrigin = await post(
      h!,
      '/cluster/leave',
      { 'content-type': 'text/plain', origin: 'http://evil.example' },
      'x',
    );
    expect(attackOrigin.status).toBe(403);
    expect(attackOrigin.body.error).toMatch(/origin/);
    // even carrying the token, a page of another origin is refused (a leaked token is not enough)
    expect((await post(h!, '/cluster/leave', { ...operator, origin: 'http://evil.example' })).status).toBe(
      403,
    );
    // the token without JSON: a form can never send application/json without a preflight
    expect(
      (await post(h!, '/cluster/leave', { ...operator, 'content-type': 'text/plain' }, 'x')).status,
    ).toBe(415);
    await new Promise((r) => setTimeout(r, 200));
    expect(closed).toBe(false);
    expect(stillUp(node)).toBe(true);
    expect(await refusedCount(h!, 'cross-site')).toBe(1);
    expect(await refusedCount(h!, 'origin')).toBe(2);
    expect(await refusedCount(h!, 'content-type')).toBe(1);
    const refusals = lines.map((l) => JSON.parse(l)).filter((e) => e.event === 'http.refused');
    expect(refusals.map((e) => e.reason)).toEqual(['cross-site', 'origin', 'origin', 'content-type']);
    expect(refusals[0]).toMatchObject({
      method: 'POST',
      path: '/cluster/leave',
      origin: 'http://evil.example',
    });
    expect(lines.join('\n')).not.toContain(TOKEN);

    // positive control: the operator's request (token, JSON, no Origin) makes the same node leave
    const leave = await post(h!, '/cluster/leave', operator);
    expect(leave).toMatchObject({ status: 202, body: { leaving: true } });
    expect(await node.closed).toBe('shutdown');
  });

  it('a page of the server itself (its own origin) may POST with the token', async () => {
    const [p1, p2, h1] = await freePorts(3);
    await start(p1!, h1!, p1!, { httpToken: TOKEN });
    const second = await start(p2!, 0, p1!);
    await eventually(async () => (await members(h1!)).filter((m) => m.status === 'up').length === 2);
    second.transport.system.terminate();
    const r = await post(h1!, `/cluster/down/127.0.0.1:${p2}`, {
      ...operator,
      origin: `http://127.0.0.1:${h1}`,
      'sec-fetch-site': 'same-origin',
    });
    expect(r.status).toBe(202);
  });
});

describe('management HTTP: the bearer token', () => {
  it('POST /cluster/down without the token or with a wrong one answers 401 and downs nobody; with the token it downs', async () => {
    const [p1, p2, h1] = await freePorts(3);
    await start(p1!, h1!, p1!, { httpToken: TOKEN });
    const second = await start(p2!, 0, p1!);
    const target = `127.0.0.1:${p2}`;
    await eventually(async () => (await members(h1!)).filter((m) => m.status === 'up').length === 2, {
      what: 'two up members',
    });

    const none = await post(h1!, `/cluster/down/${target}`, { 'content-type': 'application/json' });
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    const wrong = await post(h1!, `/cluster/down/${target}`, {
      ...operator,
      authorization: `Bearer ${TOKEN.slice(0, -1)}x`,
    });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('www-authenticate')).toBe('Bearer');
    const notBearer = await post(h1!, `/cluster/down/${target}`, { ...operator, authorization: TOKEN });
    expect(notBearer.status).toBe(401);
    expect(await refusedCount(h1!, 'unauthorized')).toBe(3);
    await new Promise((r) => setTimeout(r, 300));
    expect((await members(h1!)).find((m) => m.address === target)?.status).toBe('up');
    expect(stillUp(second)).toBe(true);

    // positive control: the same request with the token downs it
    second.transport.system.terminate();
    expect((await post(h1!, `/cluster/down/${target}`, operator)).status).toBe(202);
    await eventually(async () => (await members(h1!)).find((m) => m.address === target)?.status === 'down', {
      what: 'the second node downed',
    });
  });

  it('without a management token the plane is read-only: leave, down and fault injection answer 403', async () => {
    const [p, h] = await freePorts(2);
    const node = await start(p!, h!, p!, { faultInjection: true });
    for (const path of [
      '/cluster/leave',
      `/cluster/down/127.0.0.1:${p}`,
      '/fault/blackhole',
      '/fault/heal',
    ]) {
      const r = await post(h!, path, operator, '{"peers":["127.0.0.1:1"]}');
      expect(r.status, path).toBe(403);
      expect(r.body.error).toMatch(/read-only.*management token.*DOYEN_HTTP_TOKEN/);
    }
    expect(await refusedCount(h!, 'read-only')).toBe(4);
    // reading still works
    expect((await fetch(`http://127.0.0.1:${h}/cluster`)).status).toBe(200);
    expect(stillUp(node)).toBe(true);
  });

  it('fault injection needs the token too; with it, it blackholes', async () => {
    const [p, h] = await freePorts(2);
    const node = await start(p!, h!, p!, { faultInjection: true, httpToken: TOKEN });
    const body = '{"peers":["127.0.0.1:1"]}';
    expect((await post(h!, '/fault/blackhole', { 'content-type': 'application/json' }, body)).status).toBe(
      401,
    );
    expect(
      (
        await post(
          h!,
          '/fault/blackhole',
          { 'content-type': 'text/plain', origin: 'http://evil.example' },
          body,
        )
      ).status,
    ).toBe(403);
    const ok = await post(h!, '/fault/blackhole', operator, body);
    expect(ok).toMatchObject({ status: 200, body: { ok: true } });
    expect(stillUp(node)).toBe(true);
  });
});

/** A GET naming `host` in its Host header, as a DNS-rebound page sends it (fetch cannot set Host). */
function getWithHost(address: string, port: number, path: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: address, port, path, headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('management HTTP: DNS rebinding', () => {
  it('on a loopback binding, answers only requests for its own names', async () => {
    const [p, h] = await freePorts(2);
    const node = await start(p!, h!, p!, { httpAllowedOrigins: ['https://ops.example:8443'] });
    // a page of evil.example, rebound to 127.0.0.1, reads /cluster: its Host names evil.example
    expect(await getWithHost('127.0.0.1', h!, '/cluster', `evil.example:${h}`)).toBe(403);
    expect(node.system.metrics.value('doyen_http_refused_total', { reason: 'host' })).toBe(1);
    // positive control: the loopback names, and an allowed origin's host (a proxy in front)
    for (const host of [`127.0.0.1:${h}`, `localhost:${h}`, `[::1]:${h}`, 'ops.example:8443'])
      expect(await getWithHost('127.0.0.1', h!, '/cluster', host), host).toBe(200);
  });

  it('bound to every interface it cannot know its names, and answers any Host', async () => {
    const [p, h] = await freePorts(2);
    await start(p!, h!, p!, { httpHost: '0.0.0.0' });
    expect(await getWithHost('127.0.0.1', h!, '/cluster', 'node-3.internal:8558')).toBe(200);
  });
});

describe('management HTTP: where it listens', () => {
  /** Starts a node with `extra` and checks its management port answers on `listens` only, not on `refuses`. */
  async function expectListening(extra: Partial<NodeConfig>, listens: string, refuses: string) {
    const [p, h] = await freePorts(2);
    const node = await start(p!, h!, p!, extra);
    expect(node.http!.address.address).toBe(listens);
    expect((await fetch(`http://${listens}:${h}/health/alive`)).status).toBe(200);
    await expect(fetch(`http://${refuses}:${h}/health/alive`)).rejects.toThrow();
  }

  it('binds 127.0.0.1 by default, not the cluster host: another local address is refused', async () => {
    // the cluster port on every interface; the management port must still be loopback-only
    await expectListening({ bindHost: '0.0.0.0' }, '127.0.0.1', '127.0.0.2');
  });

  it('binds where httpHost says', async () => {
    await expectListening({ httpHost: '127.0.0.2' }, '127.0.0.2', '127.0.0.1');
  });
});
