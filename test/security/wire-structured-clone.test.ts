import { Packr, Unpackr } from 'msgpackr';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { batchFrameOf, CloseCode, withDecodingSystem } from '../../packages/wire/src/index.js';
import { type ClusterNode, startTwoNodes } from '../support/cluster-nodes.js';
import { connectRaw, handshake, rawPeerIdentity } from '../support/raw-peer.js';
import { eventually } from '../support/wait.js';

const running: ClusterNode[] = [];
const uncaught = vi.fn();
afterEach(async () => {
  process.off('uncaughtException', uncaught);
  await Promise.all(running.splice(0).map((n) => n.transport.close()));
});

const rejected = (n: ClusterNode, reason: string) =>
  n.transport.system.metrics.value('doyen_wire_rejected_total', { reason });

describe('issue 10 (1): structured-clone extensions from the network', () => {
  it('a membership.join with a self-referencing field is refused and counted; the node stays up; without the cycle it is accepted', async () => {
    process.on('uncaughtException', uncaught);
    const { a, b, peerPort: evilPort } = await startTwoNodes(running);
    expect(a.cluster.state().isCoordinator).toBe(true);
    // both up before the attack: a joiner that never answers (the raw peer below) is judged
    // unreachable at once (its port refuses), and no one goes up past an unreachable member
    await eventually(
      () => b.cluster.state().membership?.members.filter((m) => m.status === 'up').length === 2,
      { what: 'A and B up' },
    );

    // an authenticated peer (it has the secret) joins at the coordinator A (joins are not forwarded:
    // a seed that is not the coordinator redirects the joiner, so the join must come from it)
    const identity = { host: '127.0.0.1', port: evilPort, uid: 'evil' };
    const replyTo = b.transport.system.refFor(`doyen://it@127.0.0.1:${evilPort}/system/membership#evil`);
    // the identity key its connection proves (a join must name it, see identity-keys.test.ts)
    const publicKey = rawPeerIdentity.publicKey;
    const join = { type: 'membership.join', node: identity, name: 'evil', roles: [], replyTo, publicKey };
    const cycle: Record<string, unknown> = { n: 1 };
    cycle.self = cycle;
    const cloning = new Packr({ structuredClone: true });
    const attack = cloning.pack(
      batchFrameOf([['/system/membership', a.cluster.self.uid, null, { ...join, extra: cycle }]]),
    );
    expect(attack.length).toBeLessThan(400);
    // positive control: msgpackr's decoder, as the wire configured it before, builds the cycle
    const before = withDecodingSystem(b.transport.system, () =>
      new Unpackr({ sequential: true, useRecords: true }).unpack(attack),
    ) as [string, unknown[], number, { extra: { self: unknown } }];
    expect(before[3].extra.self).toBe(before[3].extra);

    const raw = await connectRaw(a.transport.port);
    await handshake(raw, { cluster: 'it', secret: 's', ...identity, lane: 'system' });
    raw.sendRaw(attack);
    expect(await raw.closed).toMatchObject({ code: CloseCode.unsupportedData });
    expect(rejected(a, 'unsupported-msgpack')).toBe(1);

    // the same join without the cycle is accepted and handled by the coordinator
    const honest = await connectRaw(a.transport.port);
    await handshake(honest, { cluster: 'it', secret: 's', ...identity, lane: 'system' });
    honest.sendRaw(
      new Packr({ useRecords: false }).pack(
        batchFrameOf([['/system/membership', a.cluster.self.uid, null, join]]),
      ),
    );
    await eventually(
      () => a.cluster.state().membership?.members.some((m) => m.address === `127.0.0.1:${evilPort}`),
      { what: 'the coordinator to admit the join' },
    );
    honest.socket.close();

    // A and B are alive and members: nothing reached the event loop
    await new Promise((r) => setTimeout(r, 100));
    expect(uncaught).not.toHaveBeenCalled();
    const up = b.cluster
      .state()
      .membership?.members.filter((m) => m.status === 'up')
      .map((m) => m.address);
    expect(up).toEqual(
      expect.arrayContaining([`127.0.0.1:${a.transport.port}`, `127.0.0.1:${b.transport.port}`]),
    );
  });
});
