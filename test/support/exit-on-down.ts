import type { SimCluster } from './sim-cluster.js';

/**
 * Makes every listed node behave like a real process run with `--on-downed exit`: the moment it
 * learns it is down it stops. `lose-in-flight` (the harshest case) also loses whatever it still
 * had on the wire, so a decider that downs its own side cannot count on its last broadcast;
 * `flush` is what `doyen node` does (its transport closes with a grace for queued frames): what it
 * sent up to that moment still arrives, nothing after. Returns when each one went down and how many
 * membership updates were lost that way (a positive control: the exits really cost messages).
 */
export function exitOnDown(
  c: SimCluster,
  all: readonly string[],
  mode: 'lose-in-flight' | 'flush' = 'lose-in-flight',
) {
  const lost = { updates: 0 };
  const downAt = new Map<string, number>();
  const exited = new Set<string>();
  c.sim.network.observe((e) => {
    if (e.kind === 'drop' && e.messageType === 'membership.update' && exited.has(e.from)) lost.updates++;
  });
  for (const name of all) {
    const node = c.get(name);
    node.cluster.subscribe((e) => {
      // the event comes before the status: this is the node learning that it is down
      if (e.type !== 'member.downed' || e.member.uid !== node.system.node.uid || downAt.has(name)) return;
      downAt.set(name, c.sim.now);
      exited.add(`${node.address.host}:${node.address.port}`);
      if (mode === 'flush') {
        // after this turn's sends: a crash keeps what is already on the wire
        c.sim.clock.setTimeout(() => {
          if (c.nodes.get(name)?.system === node.system) c.crash(name);
        }, 0);
        return;
      }
      for (const other of all) {
        if (other !== name && c.nodes.has(other)) c.sim.blockOneWay(node.system, c.get(other).system);
      }
    });
  }
  return { downAt, lost };
}
