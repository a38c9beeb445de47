// The singleton bench's network-partition case: five `doyen node` processes (the CLI from source, as
// singleton-cli-nodes.ts runs them), each in its own network namespace, a host of its own on one bridge
// (test/support/netns.ts's topology); the oldest is cut off by a symmetric nftables partition, and the time to
// the allocator's start on the majority side is measured. Needs root, `ip netns` and nft (or iptables).
import { createTopology, netnsMissing, type Topology } from '../../test/support/netns.js';
import {
  type CliHost,
  type CutOffSample,
  nodeCliArgs,
  SingletonCliCluster,
  spawnCli,
} from './singleton-cli-nodes.js';
import { sourceCliArgs } from './source-cli.js';

const PORT = 2552;
const HTTP_PORT = 8558;
/** Each management request is a process in the namespace (curl): poll less often than on loopback. */
const POLL_MS = 400;

/** Why the partition case cannot run here (what is missing), or undefined when it can. */
export function netnsUnavailable(): string | undefined {
  const lack = netnsMissing();
  return lack.length > 0 ? `missing ${lack.join(', ')}` : undefined;
}

function netnsHosts(topo: Topology, cluster: string): CliHost[] {
  return topo.hosts.map((h) => {
    const address = `${h.ip}:${PORT}`;
    return {
      name: h.name,
      address,
      spawn: (seeds) =>
        spawnCli(h.name, 'ip', [
          ...['netns', 'exec', h.ns, process.execPath],
          ...sourceCliArgs(
            nodeCliArgs({ cluster, host: h.ip, port: PORT, httpPort: HTTP_PORT, seeds, name: h.name }),
          ),
        ]),
      getJson: (_node, path) => topo.getJson(h.name, `http://${h.ip}:${HTTP_PORT}${path}`),
    };
  });
}

export interface CutOffOutcome {
  readonly samples: CutOffSample[];
  /** From every process's logs and the bench's kills (the testkit's checker), before the nodes were stopped. */
  readonly overlaps: ReturnType<SingletonCliCluster['overlaps']> | undefined;
  readonly restartLines: number;
  readonly error: string | undefined;
}

/**
 * `rounds` cut-offs of the oldest of `n` namespaced nodes: cut, wait for the allocator on the other side, heal,
 * wait until all `n` agree again (the cut-off node rejoins as the youngest). Tears everything down at the end.
 */
export async function cutOffRounds(
  n: number,
  rounds: number,
  progress: (sample: CutOffSample, round: number) => void,
): Promise<CutOffOutcome> {
  const samples: CutOffSample[] = [];
  let topo: Topology | undefined;
  let cluster: SingletonCliCluster | undefined;
  let error: string | undefined;
  let overlaps: CutOffOutcome['overlaps'];
  try {
    topo = createTopology(Array.from({ length: n }, (_, i) => `h${i + 1}`));
    const t = topo;
    cluster = await SingletonCliCluster.start(netnsHosts(t, 'bench-singleton-netns'), POLL_MS);
    for (let i = 0; i < rounds; i++) {
      const sample = await cluster.cutOffOldest(
        (victim, others) =>
          t.partition(
            [victim.name],
            others.map((o) => o.name),
          ),
        () => t.heal(),
      );
      samples.push(sample);
      progress(sample, i);
    }
  } catch (e) {
    error = (e as Error).message;
  } finally {
    overlaps = cluster?.overlaps();
    await cluster?.close();
    await topo?.teardown();
  }
  return { samples, overlaps, restartLines: cluster?.restartLines() ?? 0, error };
}
