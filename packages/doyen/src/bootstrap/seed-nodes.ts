import { type Cluster, oldestFirst } from '@doyen/cluster';
import { DoyenError, formatNodeAddress, type NodeAddress, parseNodeAddress } from '@doyen/core';
import { type ClusterMemberView, clusterMemberView, nodeUri } from '../members-api.js';

/** Akka Cluster Bootstrap's route: what a contact point tells a node that probes it. */
export const SEED_NODES_PATH = '/bootstrap/seed-nodes';

/** The body of `GET /bootstrap/seed-nodes`, in Akka's shape; `seedNodes` is empty while not in a cluster. */
export interface SeedNodesView {
  readonly selfNode: string;
  readonly seedNodes: readonly ClusterMemberView[];
}

/** Answers are small: a bigger one is refused, as is a list longer than this. */
export const MAX_SEED_NODES_ANSWER_BYTES = 64 * 1024;
const MAX_SEED_NODES = 64;

/** A probe answer that is not a seed-nodes document of our cluster. */
export class BadProbeAnswerError extends DoyenError {
  constructor(message: string) {
    super(message, 'bad-probe-answer');
  }
}

/** The up members (oldest first) when this node is up; none otherwise, so no one joins through a joiner. */
export function seedNodesView(
  cluster: Cluster | undefined,
  clusterName: string,
  self: NodeAddress,
): SeedNodesView {
  const selfNode = nodeUri(clusterName, formatNodeAddress(self));
  if (cluster?.state().status !== 'up') return { selfNode, seedNodes: [] };
  const up = oldestFirst(cluster.state().membership?.members ?? []);
  return { selfNode, seedNodes: up.slice(0, MAX_SEED_NODES).map((m) => clusterMemberView(cluster, m)) };
}

/**
 * The seed nodes in a probe's answer, rebuilt from validated fields: every entry must be an Up
 * member `doyen://<our cluster>@host:port`. An answer naming another cluster (another service
 * behind the same DNS name) is refused whole.
 */
export function parseSeedNodesAnswer(body: unknown, clusterName: string): NodeAddress[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new BadProbeAnswerError('not a JSON object');
  const list = (body as { seedNodes?: unknown }).seedNodes;
  if (!Array.isArray(list)) throw new BadProbeAnswerError('seedNodes is not an array');
  if (list.length > MAX_SEED_NODES) throw new BadProbeAnswerError(`over ${MAX_SEED_NODES} seed nodes`);
  const prefix = `doyen://${clusterName}@`;
  const seeds: NodeAddress[] = [];
  for (const entry of list) {
    const node = (entry as { node?: unknown } | null)?.node;
    const status = (entry as { status?: unknown } | null)?.status;
    if (typeof node !== 'string' || node.length > 300)
      throw new BadProbeAnswerError('a seed node without a node URI');
    if (!node.startsWith(prefix))
      throw new BadProbeAnswerError(`seed node ${node.slice(0, 120)} is not of cluster ${clusterName}`);
    if (status !== 'Up') continue;
    try {
      seeds.push(parseNodeAddress(node.slice(prefix.length)));
    } catch {
      throw new BadProbeAnswerError(`seed node ${node.slice(0, 120)}: not host:port`);
    }
  }
  return seeds;
}

/** GETs a contact point's seed nodes; rejects on any failure (no answer, not 200, too big, not ours). */
export async function probeContactPoint(
  point: NodeAddress,
  options: { readonly clusterName: string; readonly scheme: 'http' | 'https'; readonly timeoutMs: number },
): Promise<NodeAddress[]> {
  const url = `${options.scheme}://${formatNodeAddress(point)}${SEED_NODES_PATH}`;
  const response = await fetch(url, { signal: AbortSignal.timeout(options.timeoutMs), redirect: 'error' });
  if (response.status !== 200) {
    await response.body?.cancel();
    throw new BadProbeAnswerError(`${url} answered ${response.status}`);
  }
  const text = await boundedText(response, MAX_SEED_NODES_ANSWER_BYTES);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new BadProbeAnswerError(`${url}: not JSON`);
  }
  return parseSeedNodesAnswer(body, options.clusterName);
}

async function boundedText(response: Response, limit: number): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw new BadProbeAnswerError(`answer over ${limit} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
