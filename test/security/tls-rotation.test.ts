import { readFileSync } from 'node:fs';
import { type TLSSocket, connect as tlsConnect } from 'node:tls';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ClusterEvent } from '../../packages/cluster/src/index.js';
import type { NodeAddress } from '../../packages/core/src/index.js';
import { freePorts } from '../../packages/testkit/src/index.js';
import { type IssuedCertificate, TestPki } from '../support/certificates.js';
import { eventsOf, type LoggedNode, startLoggedMember } from '../support/tls-nodes.js';
import { servedSerial } from '../support/tls-probe.js';
import { eventually } from '../support/wait.js';

let pki: TestPki;
beforeAll(() => {
  pki = TestPki.create();
});
afterAll(() => pki.remove());

const running: LoggedNode[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((n) => n.transport.close()));
});

/** Re-read the files every 100 ms, so a test sees a rotation quickly. */
const RELOAD_MS = 100;

const metric = (n: LoggedNode, name: string, labels: Record<string, string> = {}) =>
  n.transport.system.metrics.value(name, labels);
const inboundAccepted = (n: LoggedNode) =>
  metric(n, 'doyen_wire_inbound_connections_total', { lane: 'system' }) +
  metric(n, 'doyen_wire_inbound_connections_total', { lane: 'user' });
const systemReceived = (n: LoggedNode) => metric(n, 'doyen_wire_messages_received_total', { lane: 'system' });

/** The serial of the certificate a node serves to a new connection. */
const served = (port: number, client: IssuedCertificate) => servedSerial(port, pki.caFile, client);

describe('certificate rotation', () => {
  it('new files from the same CA are picked up while a 3-node cluster runs: no member lost, old connections kept, new ones use the new certificate', async () => {
    const ports = await freePorts(4);
    const seeds: NodeAddress[] = [{ host: '127.0.0.1', port: ports[0]! }];
    const live = ports.slice(0, 3).map((_, i) => pki.liveFiles(`n${i}`, pki.issue(`n${i}`)));
    for (const [i, files] of live.entries()) {
      const tls = {
        caFile: pki.caFile,
        certFile: files.certFile,
        keyFile: files.keyFile,
        reloadIntervalMs: RELOAD_MS,
      };
      running.push(await startLoggedMember(ports[i]!, seeds, { tls }));
    }
    const [a, b, c] = running as [LoggedNode, LoggedNode, LoggedNode];
    await eventually(() => running.every((n) => n.cluster!.reachableMemberCount() === 3), {
      what: 'three reachable members everywhere',
      timeoutMs: 15_000,
    });
    // every member has dialled every other one on the system lane: the connections a reload must keep
    await eventually(
      () =>
        running.every((n) =>
          running.every((m) => m === n || n.transport.isConnected(m.transport.system.node, 'system')),
        ) && running.every((n) => n.transport.inboundConnections >= 2),
      { what: 'a full mesh of system-lane connections', timeoutMs: 15_000 },
    );
    const lost: ClusterEvent[] = [];
    for (const n of running) n.cluster!.subscribe((e) => e.type === 'member.unreachable' && lost.push(e));
    const acceptedBefore = running.map(inboundAccepted);
    const failuresBefore = running.map((n) =>
      metric(n, 'doyen_wire_handshake_failures_total', { lane: 'system' }),
    );
    const client = pki.issue('probe');
    expect(await served(a.transport.port, client)).toBe(live[0]!.serial);

    // a half-written rotation (new certificate, old key) is refused and the old certificate kept
    const next = pki.issue('n0-renewed');
    live[0]!.installCertificateOnly(next);
    await eventually(() => eventsOf(a, 'wire.tls.reload-refused').length > 0, { what: 'the refusal' });
    expect(String(eventsOf(a, 'wire.tls.reload-refused')[0]!.reason)).toMatch(
      /does not belong to the certificate/,
    );
    expect(await served(a.transport.port, client)).toBe(live[0]!.serial);

    // the complete new pair is loaded
    live[0]!.install(next);
    await eventually(() => eventsOf(a, 'wire.tls.reloaded').length > 0, {
      what: 'the reload',
      timeoutMs: 5_000,
    });
    expect(eventsOf(a, 'wire.tls.reloaded')[0]).toMatchObject({
      certificate: { serial: next.serial },
      previousSerial: live[0]!.serial,
    });
    expect(next.serial).not.toBe(live[0]!.serial);
    expect(await served(a.transport.port, client)).toBe(next.serial);
    // the swapped context still demands a client certificate
    const bare = tlsConnect({ host: '127.0.0.1', port: a.transport.port, ca: readFileSync(pki.caFile) });
    bare.on('error', () => {});
    await eventually(() => eventsOf(a, 'wire.tls.rejected').some((l) => l.code === 'NO_CLIENT_CERTIFICATE'), {
      what: 'a dial without a certificate to be refused after the reload',
    });
    bare.destroy();

    // heartbeats keep flowing over the connections opened before the reload
    const receivedAtReload = running.map(systemReceived);
    await eventually(() => running.every((n, i) => systemReceived(n) > receivedAtReload[i]! + 5), {
      what: 'heartbeats after the reload',
      timeoutMs: 15_000,
    });
    expect(running.map(inboundAccepted)).toEqual(acceptedBefore);
    expect(running.map((n) => metric(n, 'doyen_wire_handshake_failures_total', { lane: 'system' }))).toEqual(
      failuresBefore,
    );
    expect(running.every((n) => n.cluster!.reachableMemberCount() === 3)).toBe(true);
    expect(lost).toEqual([]);

    // a node joining now is dialled by A with A's new client certificate
    const joinerFiles = pki.issue('n3');
    const d = await startLoggedMember(ports[3]!, seeds, {
      tls: pki.tlsFor(joinerFiles, { reloadIntervalMs: RELOAD_MS }),
    });
    running.push(d);
    const clientSerials = new Map<string, string>();
    d.transport.tls!.server.on('secureConnection', (s: TLSSocket) => {
      const cert = s.getPeerCertificate();
      clientSerials.set(cert.subject.CN as string, cert.serialNumber);
    });
    await eventually(() => running.every((n) => n.cluster!.reachableMemberCount() === 4), {
      what: 'four reachable members everywhere',
      timeoutMs: 15_000,
    });
    await eventually(() => clientSerials.get('n0-renewed'), { what: "A's dial to the new node" });
    expect(clientSerials.get('n0-renewed')).toBe(next.serial);
    expect([b, c].every((n) => eventsOf(n, 'wire.tls.reloaded').length === 0)).toBe(true);
    expect(lost).toEqual([]);
  });
});
