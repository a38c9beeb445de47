import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { Cluster, nodeOf } from '../../packages/cluster/src/index.js';
import { NodeProcess } from '../../packages/testkit/src/node-process.js';
import { WsTransport } from '../../packages/wire/src/index.js';
import { freePorts } from '../support/cluster-nodes.js';
import { jsonLogCapture, type LogLine } from '../support/json-log.js';
import { eventually } from '../support/wait.js';

/**
 * Real sockets, a real kill -9: the killed process's port refuses the next dial, so both survivors
 * judge it unreachable within a few hundred ms, well before phi (~1.1 s of silence). A SIGSTOPped
 * process is not refused (its kernel still accepts): it is judged by phi, later, never by the fast path.
 */

const SECRET = 'refused-test-secret';
const CHILD = fileURLToPath(new URL('./refused-peer-process.ts', import.meta.url));
/** Phi with the defaults needs ~1.1 s of silence; the fast path answers within a heartbeat or two. */
const FAST_BOUND_MS = 700;

interface InProcessNode {
  readonly transport: WsTransport;
  readonly cluster: Cluster;
  readonly lines: LogLine[];
}

const nodes: InProcessNode[] = [];
const children: NodeProcess[] = [];
afterEach(async () => {
  for (const c of children.splice(0)) {
    if (c.running) c.resume();
    c.kill9();
  }
  await Promise.all(
    nodes.splice(0).map((n) => {
      n.cluster.stop();
      return n.transport.close();
    }),
  );
});

async function inProcess(port: number, seedPort: number): Promise<InProcessNode> {
  const { lines, logger } = jsonLogCapture('info');
  const transport = await WsTransport.start({
    cluster: 'it',
    host: '127.0.0.1',
    port,
    logger,
    wire: { secret: SECRET },
  });
  const seeds = [{ host: '127.0.0.1', port: seedPort }];
  const cluster = Cluster.start(transport.system, { seeds }, { onMemberRemoved: (n) => transport.forget(n) });
  transport.setKnownPeers([], seeds);
  cluster.subscribeMembership((m) => transport.setKnownPeers(m.members.map(nodeOf), seeds));
  const node = { transport, cluster, lines };
  nodes.push(node);
  return node;
}

/** Two nodes in this process and a third in a child process, all up everywhere; returns the child's key. */
async function threeNodes(): Promise<{ survivors: InProcessNode[]; child: NodeProcess; childKey: string }> {
  const [pa, pb, pc] = (await freePorts(3)) as [number, number, number];
  const a = await inProcess(pa, pa);
  await a.cluster.whenUp();
  const b = await inProcess(pb, pa);
  const child = NodeProcess.spawn({
    args: [
      '--conditions=@doyen/source',
      '--import',
      import.meta.resolve('tsx'),
      CHILD,
      String(pc),
      String(pa),
      SECRET,
    ],
  });
  children.push(child);
  const up = await child.waitForEvent('child.up', 30_000);
  if (!up) throw new Error('the child node did not come up');
  const survivors = [a, b];
  await eventually(
    () =>
      survivors.every(
        (n) => n.cluster.state().membership?.members.filter((m) => m.status === 'up').length === 3,
      ),
    { timeoutMs: 20_000, what: '3 up members in both survivors' },
  );
  // heartbeats flowing for a while, so phi has a history to judge by
  await new Promise((r) => setTimeout(r, 1_500));
  return { survivors, child, childKey: up.key as string };
}

const verdictsOn = (n: InProcessNode, key: string, since: number) =>
  n.lines.filter((l) => l.event === 'fd.peer-unreachable' && l.peer === key && (l.time as number) >= since);

describe('a kill -9 is judged on the refused redial; a SIGSTOP keeps the phi path (real processes)', () => {
  it('both survivors judge a kill -9d node unreachable well before phi would, citing the refused connection', async () => {
    const { survivors, child, childKey } = await threeNodes();
    const killedAt = Date.now();
    child.kill9();
    const times = await eventually(
      () => {
        const first = survivors.map((n) => verdictsOn(n, childKey, killedAt)[0]);
        return first.every((v) => v !== undefined) ? first : undefined;
      },
      { timeoutMs: 10_000, what: 'both survivors judging the killed node' },
    );
    for (const v of times) expect(v.cause).toBe('connection-refused');
    expect(Math.max(...times.map((v) => (v.time as number) - killedAt))).toBeLessThan(FAST_BOUND_MS);
  }, 60_000);

  it('positive control: a SIGSTOPped node is not refused, so it is judged by phi, after the fast bound', async () => {
    const { survivors, child, childKey } = await threeNodes();
    const stoppedAt = Date.now();
    child.pause();
    const times = await eventually(
      () => {
        const first = survivors.map((n) => verdictsOn(n, childKey, stoppedAt)[0]);
        return first.every((v) => v !== undefined) ? first : undefined;
      },
      { timeoutMs: 10_000, what: 'both survivors judging the stopped node' },
    );
    for (const v of times) expect(v.cause).toBe('phi-accrual');
    expect(Math.min(...times.map((v) => (v.time as number) - stoppedAt))).toBeGreaterThan(FAST_BOUND_MS);
  }, 60_000);
});
