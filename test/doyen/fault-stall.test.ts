import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { DoyenNode, NodeConfig } from '../../packages/doyen/src/index.js';
import { captureLogger } from '../../packages/testkit/src/index.js';
import { freePorts } from '../support/cluster-nodes.js';
import { nodesClosedAfterEach, startMemberNode } from '../support/doyen-nodes.js';

/**
 * `POST /fault/stall {"ms": N}`: the CPU-starvation fault of the netns singleton-safety tests.
 * It answers first, then the node's event loop is busy for N ms; bad input is refused with 400;
 * it exists only with fault injection on.
 */
const SECRET = randomBytes(16).toString('hex');
const TOKEN = randomBytes(16).toString('hex');
const operator = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };

const nodes = nodesClosedAfterEach();

async function start(
  extra: Partial<NodeConfig>,
  lines: string[],
): Promise<{ node: DoyenNode; http: number }> {
  const [p, h] = await freePorts(2);
  const node = await startMemberNode(
    p!,
    p!,
    { cluster: 'fault-stall', httpPort: h!, secret: SECRET, httpToken: TOKEN, ...extra },
    { logger: captureLogger(lines, Date.now, 'info') },
    nodes,
  );
  return { node, http: h! };
}

const stall = (http: number, body: string) =>
  fetch(`http://127.0.0.1:${http}/fault/stall`, { method: 'POST', headers: operator, body });

/** How long a 0 ms timer set now takes to run: how long the event loop is kept from turning. */
const loopLag = () =>
  new Promise<number>((resolve) => {
    const at = performance.now();
    setTimeout(() => resolve(performance.now() - at), 0);
  });

describe('POST /fault/stall', () => {
  it('answers, then keeps the event loop busy for the ms asked, and logs fault.stall', async () => {
    const lines: string[] = [];
    const { http } = await start({ faultInjection: true }, lines);
    // control: without a stall the loop turns at once
    expect(await loopLag()).toBeLessThan(200);
    const asked = performance.now();
    const res = await stall(http, '{"ms": 400}');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true, ms: 400 });
    // the node runs in this process: the loop turns again only once the stall is over
    await loopLag();
    expect(performance.now() - asked).toBeGreaterThanOrEqual(395);
    const logged = lines.map((l) => JSON.parse(l)).find((l) => l.event === 'fault.stall');
    expect(logged).toMatchObject({ ms: 400, level: 40 });
  });

  it('refuses a stall that is not a whole number of ms from 1 to 60000 with 400, and does not stall', async () => {
    const lines: string[] = [];
    const { http } = await start({ faultInjection: true }, lines);
    for (const body of [
      '{}',
      '{"ms": 0}',
      '{"ms": -5}',
      '{"ms": 60001}',
      '{"ms": 1.5}',
      '{"ms": "100"}',
      '[]',
      'x',
    ]) {
      const res = await stall(http, body);
      expect(res.status, body).toBe(400);
      expect(((await res.json()) as { error: string }).error, body).toMatch(/ms must be|JSON/);
    }
    expect(await loopLag()).toBeLessThan(200);
    expect(lines.some((l) => l.includes('"fault.stall"'))).toBe(false);
    // the edges of the range are accepted
    expect((await stall(http, '{"ms": 1}')).status).toBe(200);
  });

  it('is not there without fault injection (404), and needs the management token (401)', async () => {
    const { http } = await start({}, []);
    expect((await stall(http, '{"ms": 5000}')).status).toBe(404);
    expect(await loopLag()).toBeLessThan(200);
    const on = await start({ faultInjection: true }, []);
    const anonymous = await fetch(`http://127.0.0.1:${on.http}/fault/stall`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"ms": 5000}',
    });
    expect(anonymous.status).toBe(401);
    expect(await loopLag()).toBeLessThan(200);
  });
});
