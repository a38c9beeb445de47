import { afterEach, describe, expect, it } from 'vitest';
import type { DoyenNode } from '../../packages/doyen/src/index.js';
import { type Recorder, record, startInspectedNode, upgradeStatus } from '../inspector/support.js';
import { freePorts } from '../support/cluster-nodes.js';

const nodes: DoyenNode[] = [];
const recorders: Recorder[] = [];
afterEach(async () => {
  await Promise.all(recorders.splice(0).map((r) => r.close()));
  await Promise.all(nodes.splice(0).map((n) => n.close()));
});

describe('/inspector/live: origins from an allow-list, never compared with Host', () => {
  it('refuses a DNS-rebound page (Origin evil.example, Host 127.0.0.1:PORT); its own origin connects and gets a snapshot', async () => {
    const [p, h] = await freePorts(2);
    const node = await startInspectedNode(p!, h!, p!);
    nodes.push(node);
    const live = `ws://127.0.0.1:${h}/inspector/live`;
    const refused = () => node.system.metrics.value('doyen_http_refused_total', { reason: 'origin' });

    // after rebinding evil.example to 127.0.0.1 the browser sends its own origin and the Host the
    // attacker's name resolves to; here Host is the real one, which a Host comparison would pass
    const rebound = await upgradeStatus(live, { origin: 'http://evil.example', host: `127.0.0.1:${h}` });
    expect(rebound).toBe(403);
    // and with Host equal to the attacker's own name (what rebinding really sends)
    expect(await upgradeStatus(live, { origin: `http://evil.example:${h}`, host: `evil.example:${h}` })).toBe(
      403,
    );
    expect(await upgradeStatus(live, { origin: 'null' })).toBe(403);
    expect(refused()).toBe(3);

    // positive control: the page's own origins connect and receive the machines
    for (const origin of [`http://127.0.0.1:${h}`, `http://localhost:${h}`, `http://[::1]:${h}`]) {
      const r = await record(live, { origin });
      recorders.push(r);
      const hello = await r.waitFor((m) => m.type === 'hello', `hello for ${origin}`);
      expect(hello.machines).toContain('/system/membership');
      await r.waitFor(
        (m) => m.type === 'update' && m.path === '/system/membership',
        `snapshot for ${origin}`,
      );
    }
    // a non-browser client (no Origin) is accepted
    const cli = await record(live);
    recorders.push(cli);
    await cli.waitFor((m) => m.type === 'hello', 'hello without an Origin');
    expect(refused()).toBe(3);
  });

  it('accepts the origins given in httpAllowedOrigins, and only those', async () => {
    const [p, h] = await freePorts(2);
    nodes.push(await startInspectedNode(p!, h!, p!, { httpAllowedOrigins: ['https://ops.example:8443'] }));
    const live = `ws://127.0.0.1:${h}/inspector/live`;
    expect(await upgradeStatus(live, { origin: 'https://ops.example:8443' })).toBe(101);
    expect(await upgradeStatus(live, { origin: 'https://ops.example' })).toBe(403);
    expect(await upgradeStatus(live, { origin: 'http://ops.example:8443' })).toBe(403);
  });
});
