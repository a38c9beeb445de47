import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { fromTransition } from 'xstate';
import { Metrics, silentLogger } from '../../packages/core/src/index.js';
import { type DoyenNode, startNode } from '../../packages/doyen/src/index.js';
import { freePorts } from '../support/cluster-nodes.js';
import { eventually } from '../support/wait.js';

interface Sample {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly value: number;
}

/**
 * A parser of Prometheus' text format (0.0.4), written from the format's description and
 * independent of prom-client: label values unescaped (`\\`, `\"`, `\n`), `# TYPE` lines kept.
 */
function parseExposition(text: string): { samples: Sample[]; types: Map<string, string> } {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) {
      types.set(type[1]!, type[2]!);
      continue;
    }
    if (line.startsWith('#')) continue;
    const name = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)![0];
    let i = name.length;
    const labels: Record<string, string> = {};
    if (line[i] === '{') {
      i++;
      while (line[i] !== '}') {
        const label = /^[a-zA-Z_][a-zA-Z0-9_]*/.exec(line.slice(i))![0];
        i += label.length;
        if (line.slice(i, i + 2) !== '="') throw new Error(`bad label in ${line}`);
        i += 2;
        let value = '';
        while (line[i] !== '"') {
          if (line[i] === '\\') {
            const next = line[i + 1];
            value += next === 'n' ? '\n' : next;
            i += 2;
          } else value += line[i++];
        }
        i++;
        labels[label] = value;
        if (line[i] === ',') i++;
      }
      i++;
    }
    const value = Number(line.slice(i).trim().split(' ')[0]);
    samples.push({ name, labels, value });
  }
  return { samples, types };
}

const find = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
  samples.find(
    (s) =>
      s.name === name &&
      Object.keys(s.labels).length === Object.keys(labels).length &&
      Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );

describe('metrics exposition (prom-client behind Metrics)', () => {
  it('escapes label values and keeps distinct label sets distinct', async () => {
    const m = new Metrics();
    const nasty = 'a "quoted" back\\slash\nnewline';
    m.inc('doyen_test_total', 'test counter', { path: nasty });
    m.inc('doyen_test_total', 'test counter', { path: nasty }, 2);
    m.inc('doyen_pair_total', 'two labels', { a: 'x', b: 'y' });
    m.inc('doyen_pair_total', 'two labels', { a: 'x,b=y' }, 5);
    m.set('doyen_gauge', 'a gauge', 7, { lane: 'user' });
    const { samples, types } = parseExposition(await m.render());
    expect(find(samples, 'doyen_test_total', { path: nasty })?.value).toBe(3);
    expect(find(samples, 'doyen_pair_total', { a: 'x', b: 'y' })?.value).toBe(1);
    expect(find(samples, 'doyen_pair_total', { a: 'x,b=y' })?.value).toBe(5);
    expect(m.value('doyen_pair_total', { a: 'x', b: 'y' })).toBe(1);
    expect(m.value('doyen_pair_total', { a: 'x,b=y' })).toBe(5);
    expect(find(samples, 'doyen_gauge', { lane: 'user' })?.value).toBe(7);
    expect(types.get('doyen_test_total')).toBe('counter');
    expect(types.get('doyen_gauge')).toBe('gauge');
  });

  it('renders histograms with cumulative buckets, sum and count', async () => {
    const m = new Metrics();
    for (const v of [0.0004, 0.003, 0.003, 0.2, 20]) m.observe('doyen_x_seconds', 'x', v, { lane: 'user' });
    const { samples, types } = parseExposition(await m.render());
    expect(types.get('doyen_x_seconds')).toBe('histogram');
    const bucket = (le: string) => find(samples, 'doyen_x_seconds_bucket', { le, lane: 'user' })?.value;
    expect(bucket('0.0005')).toBe(1);
    expect(bucket('0.005')).toBe(3);
    expect(bucket('0.25')).toBe(4);
    expect(bucket('10')).toBe(4);
    expect(bucket('+Inf')).toBe(5);
    expect(find(samples, 'doyen_x_seconds_count', { lane: 'user' })?.value).toBe(5);
    expect(find(samples, 'doyen_x_seconds_sum', { lane: 'user' })?.value).toBeCloseTo(20.2064, 6);
  });

  it('adds the default process and Node.js metrics, per registry', async () => {
    const a = new Metrics();
    const b = new Metrics();
    a.inc('doyen_only_in_a_total', 'a');
    const { samples, types } = parseExposition(await a.render());
    for (const name of [
      'process_cpu_user_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_heap_size_used_bytes',
    ])
      expect(find(samples, name), name).toBeDefined();
    expect(types.get('nodejs_eventloop_lag_seconds')).toBe('gauge');
    const other = parseExposition(await b.render());
    expect(find(other.samples, 'doyen_only_in_a_total')).toBeUndefined();
    expect(a.contentType).toBe('text/plain; version=0.0.4; charset=utf-8');
  });

  it('a series that gains a label name later keeps every value', async () => {
    const m = new Metrics();
    m.inc('doyen_failures_total', 'f', { lane: 'user' });
    await m.render();
    m.inc('doyen_failures_total', 'f', { lane: 'user', reason: 'timeout' }, 2);
    const { samples } = parseExposition(await m.render());
    expect(find(samples, 'doyen_failures_total', { lane: 'user' })?.value).toBe(1);
    expect(find(samples, 'doyen_failures_total', { lane: 'user', reason: 'timeout' })?.value).toBe(2);
  });
});

describe('GET /metrics of a node', () => {
  const nodes: DoyenNode[] = [];
  afterEach(async () => {
    await Promise.all(nodes.splice(0).map((n) => n.close()));
  });

  it('serves ask latency, handshake time, heartbeat inter-arrival and mailbox depth histograms with the charset', async () => {
    const [p1, p2, h1] = await freePorts(3);
    const secret = randomBytes(16).toString('hex');
    const start = async (port: number, httpPort?: number) => {
      const n = await startNode(
        {
          cluster: 'metrics',
          host: '127.0.0.1',
          port,
          ...(httpPort ? { httpPort } : {}),
          seeds: [{ host: '127.0.0.1', port: p1! }],
          secret,
          partitions: { count: 0 },
        },
        { logger: silentLogger() },
      );
      nodes.push(n);
      return n;
    };
    const first = await start(p1!, h1!);
    const second = await start(p2!);
    const echo = second.system.functionRef('echo', (message) => {
      const replyTo = (message as { replyTo?: { send(m: unknown): void } }).replyTo;
      replyTo?.send({ type: 'echoed' });
    });
    first.system.messageTypes.register(['echo', 'echoed']);
    second.system.messageTypes.register(['echo', 'echoed']);
    const remote = first.system.refFor(echo.id);
    await first.system.ask(remote, (replyTo) => ({ type: 'echo', replyTo }), { timeout: 3000 });
    const counter = first.system.spawn(
      fromTransition((n: number) => n + 1, 0),
      { name: 'counter' },
    );
    for (let i = 0; i < 128; i++) counter.send({ type: 'inc' });
    const response = await eventually(async () => {
      const r = await fetch(`http://127.0.0.1:${h1}/metrics`);
      const text = await r.text();
      return text.includes('doyen_heartbeat_interarrival_seconds_count') && { r, text };
    });
    expect(response.r.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const { samples } = parseExposition(response.text);
    expect(
      find(samples, 'doyen_ask_duration_seconds_count', { outcome: 'settled' })?.value,
    ).toBeGreaterThanOrEqual(1);
    const handshakes = samples.filter((x) => x.name === 'doyen_wire_handshake_duration_seconds_count');
    expect(handshakes.reduce((sum, x) => sum + x.value, 0)).toBeGreaterThanOrEqual(1);
    expect(handshakes.every((x) => x.labels.lane === 'user' || x.labels.lane === 'system')).toBe(true);
    expect(find(samples, 'doyen_heartbeat_interarrival_seconds_count')?.value).toBeGreaterThan(0);
    expect(find(samples, 'doyen_cluster_members')?.value).toBe(2);
    expect(find(samples, 'process_resident_memory_bytes')?.value).toBeGreaterThan(0);
    expect(find(samples, 'doyen_mailbox_depth_sampled_count')?.value).toBeGreaterThanOrEqual(2);
  });
});
