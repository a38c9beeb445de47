// CPU per local sharded tell with and without the entity lease gate (issue 29: an entity reads the
// owner lease by the clock before its turn, fast path, or before each event, machines), in this
// process: two regions on two actor systems with a real clock, each hosting every partition, the
// one gated and the other not (`gateEntityTurns: false`), in interleaved rounds. The guard reads
// the clock as the real owner lease does (`OwnerLeases.holdsOwn`: one `clock.now()`, two bounds).
// CPU time, not wall time: the figure the machine's load distorts least.
// Run: npx tsx --conditions=@doyen/source bench/lib/sharding-gate-cpu.ts [messages] [rounds]
import { pathToFileURL } from 'node:url';
import { createMachine } from 'xstate';
import { ActorSystem, fromTransition, type Message } from '../../packages/core/src/index.js';
import { entityTypeOf } from '../../packages/sharding/src/entity-type.js';
import { EMPTY_CARGO } from '../../packages/sharding/src/partition-keeper/keeper-host.js';
import { Region } from '../../packages/sharding/src/region/region.js';
import { ShardingMetrics } from '../../packages/sharding/src/region/sharding-metrics.js';
import { median } from './stats.js';

const PARTITIONS = 271;
const TELL: Message = { type: 'sb.tell' };
/** What the gate may add per tell: one clock read (the brief's 30–60 ns). */
const ADDED_TARGET_US = 0.06;

export interface GateCpu {
  /** Median µs of CPU per tell, gated / ungated, to `entities` fast-path entities. */
  readonly fastGatedUs: number;
  readonly fastUngatedUs: number;
  /** The same to `entities` machine entities (xstate path: one lease read per event). */
  readonly machineGatedUs: number;
  readonly machineUngatedUs: number;
  /** The same, every tell to one fast-path entity (a burst: a gated cell never runs in its caller). */
  readonly burstGatedUs: number;
  readonly burstUngatedUs: number;
  readonly messages: number;
  readonly rounds: number;
  readonly entities: number;
}

type Kind = 'fast' | 'machine';

function regionOn(gated: boolean, counted: Record<Kind, number>) {
  const system = new ActorSystem({ cluster: 'bench', host: '127.0.0.1', port: gated ? 1 : 2, uid: 'u' });
  const selfKey = `127.0.0.1:${gated ? 1 : 2}#u`;
  const region = new Region(system, new ShardingMetrics(system.metrics), {
    partitionCount: PARTITIONS,
    selfKey,
    gateEntityTurns: gated,
  });
  system.messageTypes.register(['sb.tell']);
  region.addType(
    entityTypeOf(
      'fast',
      fromTransition((n: number, _e: Message) => {
        counted.fast++;
        return n + 1;
      }, 0),
      {},
    ),
    true,
  );
  region.addType(
    entityTypeOf(
      'machine',
      createMachine({
        context: { n: 0 },
        on: { 'sb.tell': { actions: () => counted.machine++ } },
      }),
      {},
    ),
    true,
  );
  region.adoptTable({ version: 1, owners: Array.from({ length: PARTITIONS }, () => selfKey) });
  // as OwnerLeases.holdsOwn: the clock read and two bounds
  const own = { readyAt: 0, heldUntil: Number.POSITIVE_INFINITY };
  region.guardDelivery({
    holdsOwn: () => {
      const now = system.clock.now();
      return now >= own.readyAt && now < own.heldUntil;
    },
    lapsed: () => {},
  });
  for (let p = 0; p < PARTITIONS; p++) region.activate(p, 1, EMPTY_CARGO);
  return { system, region };
}

export async function measureGateCpu(messages: number, rounds: number, entities = 1000): Promise<GateCpu> {
  const counted = { gated: { fast: 0, machine: 0 }, ungated: { fast: 0, machine: 0 } };
  const regions = { gated: regionOn(true, counted.gated), ungated: regionOn(false, counted.ungated) };
  const ids = Array.from({ length: entities }, (_, k) => `sb-${k}`);
  const round = async (side: 'gated' | 'ungated', kind: Kind, burst: boolean): Promise<number> => {
    const { region } = regions[side];
    const before = counted[side][kind];
    const cpu = process.cpuUsage();
    for (let m = 0; m < messages; m++) {
      region.send(kind, burst ? ids[0]! : ids[m % entities]!, TELL, undefined);
      if (m % 2000 === 1999) await new Promise((resolve) => setImmediate(resolve));
    }
    const until = performance.now() + 30_000;
    while (counted[side][kind] - before < messages && performance.now() < until)
      await new Promise((resolve) => setImmediate(resolve));
    const used = process.cpuUsage(cpu);
    return (used.user + used.system) / messages;
  };
  const cases = [
    ['fast', false],
    ['machine', false],
    ['fast', true],
  ] as const;
  // the first rounds activate the entities and warm every path up
  for (const side of ['gated', 'ungated'] as const) for (const [k, b] of cases) await round(side, k, b);
  const us: Record<string, number[]> = {};
  for (let r = 0; r < rounds; r++)
    for (const [k, b] of cases)
      for (const side of r % 2 === 0 ? (['gated', 'ungated'] as const) : (['ungated', 'gated'] as const))
        (us[`${b ? 'burst' : k}-${side}`] ??= []).push(await round(side, k, b));
  const at = (key: string) => Math.round(median(us[key]!) * 1000) / 1000;
  for (const { system } of Object.values(regions)) await system.terminate();
  return {
    fastGatedUs: at('fast-gated'),
    fastUngatedUs: at('fast-ungated'),
    machineGatedUs: at('machine-gated'),
    machineUngatedUs: at('machine-ungated'),
    burstGatedUs: at('burst-gated'),
    burstUngatedUs: at('burst-ungated'),
    messages,
    rounds,
    entities,
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [messages = 100_000, rounds = 9] = process.argv.slice(2).map(Number);
  const figures = await measureGateCpu(messages, rounds);
  const added = (a: number, b: number) => Math.round((a - b) * 1000) / 1000;
  // the last line: the added CPU per tell beside its target (at most one clock read, ~30–60 ns)
  console.log(
    JSON.stringify({
      ...figures,
      fastAddedUs: added(figures.fastGatedUs, figures.fastUngatedUs),
      machineAddedUs: added(figures.machineGatedUs, figures.machineUngatedUs),
      burstAddedUs: added(figures.burstGatedUs, figures.burstUngatedUs),
      addedTargetUs: ADDED_TARGET_US,
      at: new Date().toISOString(),
    }),
  );
}
