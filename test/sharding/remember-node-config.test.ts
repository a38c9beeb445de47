// `sharding.remember` in a node's config: startNode hands the store to sharding, and a type
// registered with `remember: true` in setup keeps its active ids there.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { fromTransition } from '../../packages/core/src/index.js';
import type { DoyenNode } from '../../packages/doyen/src/index.js';
import { MemoryRememberStore } from '../../packages/sharding/src/index.js';
import { freePorts } from '../support/cluster-nodes.js';
import { nodesClosedAfterEach, startMemberNode } from '../support/doyen-nodes.js';
import { eventually } from '../support/wait.js';

const nodes = nodesClosedAfterEach();

describe('sharding.remember on a doyen node', () => {
  it('keeps the ids of a remembering type in the configured store', async () => {
    const [port] = await freePorts(1);
    const store = new MemoryRememberStore();
    const counter = fromTransition((n: number) => n + 1, 0);
    const node: DoyenNode = await startMemberNode(
      port!,
      port!,
      {
        cluster: 'remember',
        secret: randomBytes(8).toString('hex'),
        partitions: { count: 16 },
        sharding: { remember: { store, restartsPerSecond: 500 } },
        setup: (n) => {
          n.sharding!.register('device', counter, { remember: true });
        },
      },
      {},
      nodes,
    );
    for (const id of ['d-1', 'd-2', 'd-3']) node.sharding!.ref('device', id).send({ type: 'ping' });
    await eventually(() => store.all('device').length === 3, {
      what: 'three ids remembered',
      timeoutMs: 20_000,
    });
    expect(store.all('device').sort()).toEqual(['d-1', 'd-2', 'd-3']);
  }, 30_000);
});
