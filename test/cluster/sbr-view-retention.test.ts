// The split-brain resolver keeps one membership view: the latest. Issue 28 reported that "something
// retains every `sbr.view` event"; a node that kept them would grow by one view per membership or
// reachability change, for as long as it runs. Here thousands of views go through a real node's
// downing actor, calm and troubled ones (stable, unstable, decided and back), and once collected
// only the latest may still be reachable. The positive control plants the kind of retainer the
// report suspected, an observer on the node's actors that keeps every event it sees (as an
// inspection relay with a history would), and the same count finds every view: the count is real.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, describe, expect, it } from 'vitest';
import type { InspectionEvent } from 'xstate';
import type { SbrViewMessage } from '../../packages/cluster/src/downing/downing-messages.js';
import { Cluster, defaultClusterConfig } from '../../packages/cluster/src/index.js';
import { DOWNING_PATH } from '../../packages/cluster/src/model/system-actors.js';
import type { Message } from '../../packages/core/src/index.js';
import { WsTransport } from '../../packages/wire/src/index.js';
import { freePorts } from '../support/cluster-nodes.js';
import { eventually } from '../support/wait.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const VIEWS = 2_000;
const started: WsTransport[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((t) => t.close()));
});

/** A one-member cluster on a real socket; `inspect` sees every event of its actors. */
async function node(inspect: (event: InspectionEvent) => void) {
  const [port] = await freePorts(1);
  const transport = await WsTransport.start({
    cluster: 'retention',
    host: '127.0.0.1',
    port: port!,
    wire: { secret: 's' },
    inspect,
  });
  started.push(transport);
  // a short stable-after, so the troubled runs below are decided (and the machine calms down again)
  const cluster = Cluster.start(transport.system, {
    seeds: [{ host: '127.0.0.1', port: port! }],
    sbr: { ...defaultClusterConfig.sbr, stableAfterMs: 20 },
  });
  await cluster.whenUp();
  return { system: transport.system, selfKey: cluster.self.key };
}

/**
 * Sends VIEWS views to the node's downing actor: two other members, one of them unreachable for
 * runs longer than stable-after and reachable again, so the machine goes round its states.
 * Returns how many of them are still reachable once everything was processed and collected.
 */
async function viewsStillHeld(system: WsTransport['system'], selfKey: string): Promise<number> {
  const downing = system.lookup(DOWNING_PATH)!;
  const held: WeakRef<SbrViewMessage>[] = [];
  const members = [
    { key: selfKey, address: '127.0.0.1:1', age: 0, status: 'up' as const, roles: [] },
    { key: 'b#1', address: '127.0.0.1:2', age: 1, status: 'up' as const, roles: [] },
    { key: 'c#1', address: '127.0.0.1:3', age: 2, status: 'up' as const, roles: [] },
  ];
  for (let i = 0; i < VIEWS; i++) {
    const view: SbrViewMessage = {
      type: 'sbr.view',
      selfKey,
      version: 10 + i,
      members: members.map((m) => ({ ...m })),
      observations: i % 100 < 60 ? { 'c#1': [selfKey] } : {},
    };
    held.push(new WeakRef(view));
    downing.send(view as unknown as Message);
    // time passes between views: the machine's timers (stable-after, calm-for) run
    if (i % 5 === 4) await new Promise((r) => setTimeout(r, 2));
  }
  await eventually(() => system.mailboxSize(downing) === 0, { what: 'the downing mailbox drained' });
  await new Promise((r) => setTimeout(r, 50));
  gc();
  await new Promise((r) => setTimeout(r, 10));
  gc();
  return held.filter((r) => r.deref() !== undefined).length;
}

describe('sbr.view retention', () => {
  it(`after ${VIEWS} views the downing machine holds only the latest`, async () => {
    // the states the downing machine went through (their names only: nothing of the events)
    const states = new Set<string>();
    const { system, selfKey } = await node((event) => {
      if (event.type === '@xstate.snapshot' && (event.actorRef as { id?: string }).id === DOWNING_PATH)
        states.add(JSON.stringify((event.snapshot as { value?: unknown }).value));
    });
    const still = await viewsStillHeld(system, selfKey);
    expect(still).toBeLessThanOrEqual(1);
    expect([...states].join(' ')).toMatch(/unstable/);
    expect(states).toContain('"decided"');
    expect(states).toContain('"stable"');
  });

  it('positive control: an observer that keeps every event it sees holds every view, and the count says so', async () => {
    const kept: unknown[] = [];
    const { system, selfKey } = await node((event) => {
      if (event.type === '@xstate.event' && (event.event as { type?: string }).type === 'sbr.view')
        kept.push(event.event);
    });
    const still = await viewsStillHeld(system, selfKey);
    expect(still).toBe(VIEWS);
    expect(kept.length).toBeGreaterThanOrEqual(VIEWS);
  });
});
