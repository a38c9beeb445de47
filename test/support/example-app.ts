import { expect } from 'vitest';
import type { NodeProcess } from '../../packages/testkit/src/node-process.js';
import { eventually } from './wait.js';

/** One node of apps/example-app: its process and the `host:port` it is a member at. */
export interface ExampleAppNode {
  readonly process: NodeProcess;
  readonly address: string;
}

/**
 * What apps/example-app does on every node, checked from its log lines and its management port:
 * each node counted once through the singleton's proxy and the answers are 1..n (every increment
 * reached the one instance exactly once), every node's greeter was told hello by every other
 * member, and the counter runs on the first node (the oldest) as every node sees it.
 */
export async function expectExampleAppWorks(
  nodes: readonly ExampleAppNode[],
  { timeoutMs = 30_000 }: { timeoutMs?: number } = {},
): Promise<void> {
  const counts = await eventually(
    () => {
      const seen = nodes.map((n) => n.process.events().find((e) => e.event === 'example.counter')?.count);
      return seen.every((c) => c !== undefined) && (seen as number[]);
    },
    { timeoutMs, intervalMs: 100, what: 'an example.counter line from every node' },
  );
  expect([...counts].sort((a, b) => a - b)).toEqual(nodes.map((_, i) => i + 1));
  for (const n of nodes) {
    expect(n.process.events().filter((e) => e.event === 'example.counter-failed')).toEqual([]);
    const others = nodes.filter((o) => o !== n).map((o) => o.address);
    await eventually(
      () => {
        const from = new Set(
          n.process
            .events()
            .filter((e) => e.event === 'example.greeted')
            .map((e) => String(e.from).split('#')[0]),
        );
        return others.every((a) => from.has(a));
      },
      { timeoutMs, intervalMs: 100, what: `${n.address} greeted by ${others.join(', ')}` },
    );
    // the app's own `config` turned the partition allocator off: the counter is the only singleton
    const singletons = await n.process.getJson<{ name: string; node: string | null }[]>('/singletons');
    expect(singletons).toEqual([expect.objectContaining({ name: 'counter', node: nodes[0]!.address })]);
  }
}
