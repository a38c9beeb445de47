import { afterAll, beforeAll } from 'vitest';
import { createTopology, type Topology, warmUpCli } from './netns.js';

/**
 * A topology for the tests of the enclosing `describe`: created before them (then handed to
 * `onCreated`, then the CLI warmed up), torn down after them. Apart from netns.ts, which benches
 * import outside vitest.
 */
export function useTopology(
  names: readonly string[],
  onCreated: (topo: Topology) => void,
  options: { tag?: string } = {},
): void {
  let topo: Topology | undefined;
  beforeAll(async () => {
    topo = createTopology(names, options);
    onCreated(topo);
    await warmUpCli();
  }, 150_000);
  afterAll(async () => {
    await topo?.teardown();
  });
}
