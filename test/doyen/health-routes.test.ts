import { describe, expect, it } from 'vitest';
import { HealthChecks } from '../../packages/doyen/src/index.js';
import { nodesClosedAfterEach, startLocalNode } from '../support/doyen-nodes.js';

/**
 * Akka Management's health paths: `/ready` and `/alive` answer as `/health/ready` and
 * `/health/alive`, and an app's readiness checks (`node.health.addReadinessCheck`) keep a node
 * that is up in its cluster out of the Service until its own dependencies are ready.
 */
const nodes = nodesClosedAfterEach();
const startOne = () => startLocalNode({ cluster: 'health', partitions: { count: 0 } }, {}, nodes);

const get = async (port: number, path: string) => {
  const r = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
};

describe('health routes', () => {
  it('/ready and /alive answer exactly as /health/ready and /health/alive', async () => {
    const { httpPort } = await startOne();
    expect(await get(httpPort, '/ready')).toEqual(await get(httpPort, '/health/ready'));
    expect(await get(httpPort, '/ready')).toEqual({ status: 200, body: { ready: true, status: 'up' } });
    expect(await get(httpPort, '/alive')).toEqual({ status: 200, body: { alive: true } });
    expect((await get(httpPort, '/ready/')).status).toBe(200);
    // positive control: only those two are aliases
    expect((await get(httpPort, '/readyz')).status).toBe(404);
    expect((await get(httpPort, '/health')).status).toBe(404);
  });

  it("an app's readiness check: not ready while it fails, throws or hangs; ready once it passes or goes", async () => {
    const { node, httpPort } = await startOne();
    let dbUp = false;
    node.health.addReadinessCheck('database', () => dbUp);
    for (const path of ['/ready', '/health/ready'])
      expect(await get(httpPort, path)).toEqual({
        status: 503,
        body: { ready: false, status: 'up', failing: ['database'] },
      });
    // liveness does not depend on the app's readiness
    expect((await get(httpPort, '/alive')).status).toBe(200);
    dbUp = true;
    expect((await get(httpPort, '/ready')).status).toBe(200);

    const removeThrowing = node.health.addReadinessCheck('broken', () => {
      throw new Error('boom');
    });
    expect((await get(httpPort, '/ready')).body.failing).toEqual(['broken']);
    removeThrowing();
    expect((await get(httpPort, '/ready')).status).toBe(200);

    // replaced by name: a setup that runs in every incarnation adds it again safely
    node.health.addReadinessCheck('database', async () => false);
    expect((await get(httpPort, '/ready')).body.failing).toEqual(['database']);
    node.health.addReadinessCheck('database', async () => true);
    expect((await get(httpPort, '/ready')).status).toBe(200);
  });

  it('a check that never answers counts as not ready after its time limit', async () => {
    const checks = new HealthChecks(50);
    checks.addReadinessCheck('hung', () => new Promise<boolean>(() => {}));
    checks.addReadinessCheck('fine', () => true);
    checks.addReadinessCheck('truthy-is-not-true', () => 1 as unknown as boolean);
    const started = Date.now();
    expect(await checks.notReady()).toEqual(['hung', 'truthy-is-not-true']);
    expect(Date.now() - started).toBeLessThan(1000);
    // positive control: with a time limit it can meet, a slow check passes
    const patient = new HealthChecks(1000);
    patient.addReadinessCheck('slow', () => new Promise<boolean>((r) => setTimeout(() => r(true), 50)));
    expect(await patient.notReady()).toEqual([]);
  });
});
