import { afterEach, describe, expect, it } from 'vitest';
import {
  Cluster,
  registerClusterMessages,
  SPLIT_BRAIN_CHECKER_PATH,
} from '../../packages/cluster/src/index.js';
import type { Message, NodeAddress } from '../../packages/core/src/index.js';
import { WsTransport } from '../../packages/wire/src/index.js';
import { freePorts } from '../support/cluster-nodes.js';
import { eventually } from '../support/wait.js';

const start = (port: number) =>
  WsTransport.start({ cluster: 'it', host: '127.0.0.1', port, wire: { secret: 's' } });

/**
 * The finding: with `--downing auto`, one `sbc.probe-reply` from a non-member made the
 * coordinator merge the whole cluster into the attacker's address. Now a merge follows only a
 * reply to a probe of our own (from an address we probed), toward a cluster found that way.
 */
describe('the split-brain checker merges only toward a cluster it found itself', () => {
  const transports: WsTransport[] = [];
  afterEach(async () => {
    await Promise.all(transports.splice(0).map((t) => t.close(0)));
  });

  it('ignores unsolicited probe replies from a non-member; merges on the answer to its own probe', async () => {
    const [pa, pb, px] = await freePorts(3);
    const seeds = [{ host: '127.0.0.1', port: pa! }];
    const config = { seeds, downing: 'auto' as const, splitBrainProbeIntervalMs: 100 };
    const ta = await start(pa!);
    transports.push(ta);
    const rejoins: (readonly NodeAddress[])[] = [];
    const a = Cluster.start(ta.system, config, { onRejoin: (s) => rejoins.push(s) });
    await a.whenUp();
    const tb = await start(pb!);
    const b = Cluster.start(tb.system, config, { onMemberRemoved: (n) => tb.forget(n) });
    await b.whenUp();
    await eventually(() => a.state().membership?.members.filter((m) => m.status === 'up').length === 2, {
      what: 'two up members',
    });
    // B fails: A (the coordinator, alone now) downs it and keeps probing its address
    b.stop();
    await tb.close(0);
    await eventually(() => a.state().membership?.failed.length === 1, { what: 'B downed and remembered' });

    // B's address comes back as another sub-cluster's node: it hears A's probes (not answering yet)
    const tb2 = await start(pb!);
    transports.push(tb2);
    registerClusterMessages(tb2.system.messageTypes);
    const probes: Message[] = [];
    tb2.system.functionRef(SPLIT_BRAIN_CHECKER_PATH.split('/')[2]!, (m) => probes.push(m), 'system');
    await eventually(() => probes.length >= 1, { what: "A's probe reaching B's address" });

    // a non-member with the cluster secret answers a probe nobody sent it, claiming a bigger cluster
    const tx = await start(px!);
    transports.push(tx);
    const received = () => ta.system.metrics.value('doyen_wire_messages_received_total', { lane: 'system' });
    const before = received();
    const checkerOfA = tx.system.remoteRef(ta.system.node, SPLIT_BRAIN_CHECKER_PATH);
    checkerOfA.send({
      type: 'sbc.probe-reply',
      coordinator: tx.system.node,
      size: 50,
      from: tx.system.node,
    } as Message);
    // ...and one naming the probed address as its coordinator (it is still not the one probed)
    checkerOfA.send({
      type: 'sbc.probe-reply',
      coordinator: tb2.system.node,
      size: 50,
      from: tx.system.node,
    } as Message);
    // several probe rounds pass: a reply believed would have started the merge at once
    await new Promise((r) => setTimeout(r, 500));
    expect(received()).toBeGreaterThanOrEqual(before + 2);
    expect(rejoins).toEqual([]);
    expect(a.state().status).toBe('up');

    // positive control: the same reply from the address A probed is the split-brain recovery
    tb2.system.remoteRef(ta.system.node, SPLIT_BRAIN_CHECKER_PATH).send({
      type: 'sbc.probe-reply',
      coordinator: tb2.system.node,
      size: 50,
      from: tb2.system.node,
    } as Message);
    await eventually(() => rejoins.length === 1, { what: 'A merging into the cluster it probed' });
    expect(rejoins[0]).toEqual([{ host: '127.0.0.1', port: pb! }]);
  });
});
