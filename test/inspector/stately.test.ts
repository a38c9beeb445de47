import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { validateNodeConfig } from '../../packages/doyen/src/index.js';
import {
  inspectorPageUrl,
  inspectorUrlOf,
  startInspectorServer,
} from '../../packages/doyen/src/inspector/index.js';
import { captureLogger } from '../../packages/testkit/src/index.js';
import { nodeArgs, runCli, secretEnv } from '../support/cli-process.js';
import { freePorts } from '../support/cluster-nodes.js';
import { startLocalNode } from '../support/doyen-nodes.js';
import { inspectorRunsClosedAfterEach } from '../support/inspector-runs.js';
import { NODE_CONFIG_BASE } from '../support/node-config-base.js';
import { eventually } from '../support/wait.js';
import { type Recorder, record, SYSTEM_MACHINES, startInspectedNode } from './support.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

const { nodes, servers, recorders, children } = inspectorRunsClosedAfterEach();

const registrations = (r: Recorder) => r.messages.filter((m) => m?.type === '@xstate.actor');

describe('--inspect: the Stately inspector through the doyen inspector relay', () => {
  it('starts without an inspector server, then sends every machine once the server comes up', async () => {
    const [pA, pB, hA, hB, inspectorPort] = await freePorts(5);
    const url = `ws://127.0.0.1:${inspectorPort}`;
    const a = await startInspectedNode(pA!, hA!, pA!, { inspect: { url } });
    nodes.push(a);
    // no server yet: the node is up and fine
    expect(a.cluster.state().status).toBe('up');

    const server = await startInspectorServer({ port: inspectorPort! });
    servers.push(server);
    expect(server.url).toBe(`ws://127.0.0.1:${inspectorPort}`);
    // the inspector page's side of the relay
    const page = await record(`${url}/viewer`);
    recorders.push(page);
    // A reconnects (backoff from 1 s) and replays the registrations and latest snapshots
    for (const path of SYSTEM_MACHINES) {
      await page.waitFor(
        (m) => m.type === '@xstate.actor' && m.name === `127.0.0.1:${pA}${path}`,
        `registration of ${path}`,
      );
    }
    const membership = registrations(page).find((m) => m.name === `127.0.0.1:${pA}/system/membership`);
    expect(membership.sessionId).toBe(`127.0.0.1:${pA}#${a.system.node.uid}/system/membership`);
    expect(JSON.parse(membership.definition)).toMatchObject({ id: 'membership', initial: 'joining' });
    expect(membership.snapshot.status).toBe('active');
    await page.waitFor(
      (m) =>
        m.type === '@xstate.snapshot' &&
        m.sessionId === membership.sessionId &&
        m.snapshot.value?.up?.coordinator !== undefined,
      'a membership snapshot (up)',
    );

    // a second node, with the server running from the start: distinct session ids, live events
    nodes.push(await startInspectedNode(pB!, hB!, pA!, { inspect: { url } }));
    const bMembership = await page.waitFor(
      (m) => m.type === '@xstate.actor' && m.name === `127.0.0.1:${pB}/system/membership`,
      "B's membership registration",
    );
    expect(bMembership.sessionId).not.toBe(membership.sessionId);
    await page.waitFor(
      (m) =>
        m.type === '@xstate.event' &&
        m.sessionId === bMembership.sessionId &&
        m.event?.type === 'membership.welcome',
      "B's membership receiving its welcome",
    );
    await page.waitFor(
      (m) =>
        m.type === '@xstate.snapshot' &&
        m.sessionId === membership.sessionId &&
        JSON.stringify(m.snapshot.context).includes(`127.0.0.1:${pB}`),
      "A's membership snapshot with B in it",
    );
    // one session per machine and node: eight distinct ones for the two nodes' system machines
    const sessions = new Set(registrations(page).map((m) => m.sessionId));
    for (const port of [pA, pB])
      for (const path of SYSTEM_MACHINES)
        expect(
          [...sessions].filter((s) => s.startsWith(`127.0.0.1:${port}#`) && s.endsWith(path)),
        ).toHaveLength(1);
  });

  it('logs where to look and that no server answers, through the node logger', async () => {
    const [dead] = await freePorts(1);
    const lines: string[] = [];
    const { httpPort: h } = await startLocalNode(
      { cluster: 'inspect-log', secret: 's', inspect: { url: `ws://127.0.0.1:${dead}` } },
      { logger: captureLogger(lines, Date.now, 'info') },
      nodes,
    );
    const events = () => lines.map((l) => JSON.parse(l) as { event?: string; [k: string]: unknown });
    const enabled = events().find((e) => e.event === 'inspect.enabled');
    expect(enabled).toMatchObject({
      url: `ws://127.0.0.1:${dead}`,
      open: `http://127.0.0.1:${dead}/`,
      page: `http://127.0.0.1:${h}/inspector`,
    });
    await eventually(() => events().some((e) => e.event === 'inspect.unavailable'), {
      what: 'the unavailable warning',
    });
    await new Promise((r) => setTimeout(r, 1500));
    // warned once, not on every retry
    expect(events().filter((e) => e.event === 'inspect.unavailable')).toHaveLength(1);
  });

  it('a closed node with no inspector server lets its process exit', async () => {
    const [port, dead] = await freePorts(2);
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--conditions=@doyen/source',
        'test/inspector/fixtures/inspect-no-server.ts',
        String(port),
        String(dead),
      ],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (d) => (out += String(d)));
    child.stderr.on('data', (d) => (out += String(d)));
    const code = await new Promise<number | null>((resolve) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        resolve(-1);
      }, 20_000);
      child.on('exit', (c) => {
        clearTimeout(timer);
        resolve(c);
      });
    });
    expect(out).toContain('closed');
    expect(code).toBe(0);
  });

  it('doyen inspector runs the server and doyen node --inspect-url feeds it (CLI processes)', async () => {
    const [inspectorPort, p, h] = await freePorts(3);
    const server = runCli(['inspector', '--port', String(inspectorPort)]);
    children.push(server);
    await eventually(() => server.logs.some((l) => l.includes(`open http://127.0.0.1:${inspectorPort}`)), {
      timeoutMs: 20_000,
      what: 'the inspector server up',
    });
    const page = await record(`ws://127.0.0.1:${inspectorPort}/viewer`);
    recorders.push(page);
    const node = runCli(
      [
        ...nodeArgs('cli-inspect', p!),
        '--http-port',
        String(h),
        '--inspect-url',
        `ws://127.0.0.1:${inspectorPort}`,
      ],
      h,
      secretEnv(),
    );
    children.push(node);
    await page.waitFor(
      (m) => m.type === '@xstate.actor' && m.name === `127.0.0.1:${p}/system/membership`,
      'membership registration',
      0,
      25_000,
    );
    await eventually(() => node.events().some((e) => e.event === 'inspect.connected'), {
      what: 'inspect.connected logged',
    });
    expect(node.events().find((e) => e.event === 'inspect.enabled')).toMatchObject({
      page: `http://127.0.0.1:${h}/inspector`,
    });
    // a second server on the same port is refused with a message, not a crash
    const again = runCli(['inspector', '--port', String(inspectorPort)]);
    children.push(again);
    expect((await again.exited).code).toBe(2);
    expect(again.logs.join('\n')).toContain('in use');
    node.process.kill('SIGTERM');
    expect((await node.exited).code).toBe(0);
  });

  it('reads inspect from the config and validates its url', () => {
    expect(inspectorUrlOf(undefined)).toBeUndefined();
    expect(inspectorUrlOf(false)).toBeUndefined();
    expect(inspectorUrlOf(true)).toBe('ws://127.0.0.1:8080');
    expect(inspectorUrlOf({})).toBe('ws://127.0.0.1:8080');
    expect(inspectorUrlOf({ url: 'wss://inspect.example:9000' })).toBe('wss://inspect.example:9000');
    expect(inspectorPageUrl('ws://localhost:8080')).toBe('http://localhost:8080/');
    const base = NODE_CONFIG_BASE;
    expect(() => validateNodeConfig({ ...base, inspect: { url: 'http://localhost:8080' } })).toThrow(
      /ws:\/\//,
    );
    expect(() => validateNodeConfig({ ...base, inspect: { url: 'nonsense' } })).toThrow(/ws:\/\//);
    expect(validateNodeConfig({ ...base, inspect: true }).inspect).toBe(true);
  });
});
