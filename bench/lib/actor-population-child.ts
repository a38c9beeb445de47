// Child process for `pnpm bench actors`: one population per process, so its memory figures start from a
// fresh heap and RSS. Spawns `actors` actors of one kind (doyen or bare xstate, `fromTransition` or
// `createMachine`, the same logic object for all, as an application would), then tells `tells` messages
// to random targets (the same seeded sequence on both sides) and reports over IPC:
//   spawn rate; heap and RSS per actor, idle, after a forced full GC; tell rate until the last was
//   processed; heap per actor after the tells (mailboxes that have been used).
import { type AnyActorLogic, assign, createActor, createMachine, fromTransition } from 'xstate';
import type { PopulationCase, PopulationFigures } from './actor-population.js';
import { ActorSystem } from './doyen.js';
import { settleHeap } from './settle-heap.js';
import { withTimeout } from './timeout.js';

if (!process.send) {
  console.error('actor-population-child reports over IPC: spawn it with an ipc stdio channel');
  process.exit(2);
}

type Inc = { type: 'inc' };
const INC: Inc = { type: 'inc' };

const spec = JSON.parse(process.env.ACTOR_POPULATION ?? 'null') as PopulationCase | null;
if (!spec) throw new Error('ACTOR_POPULATION (a PopulationCase as JSON) is not set');

let processed = 0;
let target = Number.POSITIVE_INFINITY;
let reached: () => void = () => {};
const count = () => {
  if (++processed === target) reached();
};

const logic: AnyActorLogic =
  spec.logic === 'transition'
    ? fromTransition((n: number, _event: Inc) => {
        count();
        return n + 1;
      }, 0)
    : createMachine({
        types: {} as { context: { count: number }; events: Inc },
        context: { count: 0 },
        on: {
          inc: {
            actions: assign({
              count: ({ context }) => {
                count();
                return context.count + 1;
              },
            }),
          },
        },
      });

/** xorshift32: the same target sequence for doyen and bare xstate, nothing random in the timed loop. */
function randomTargets(n: number, range: number, seed = 0x9e3779b9): Uint32Array {
  const out = new Uint32Array(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x % range;
  }
  return out;
}

/**
 * `check` fails the run on lost messages; `close` stops every actor (the warm-up's only: stopping a
 * million takes seconds, and the measured population's process ends right after its figures).
 */
type Population = { send(i: number): void; check(): void; close(): void };

function spawnDoyen(n: number): Population {
  const system = new ActorSystem({ cluster: 'bench', host: '127.0.0.1', port: 0 });
  const refs = new Array(n);
  for (let i = 0; i < n; i++) refs[i] = system.spawn(logic);
  return {
    send: (i) => refs[i].send(INC),
    check: () => {
      if (system.deadLetters.count > 0) throw new Error(`${system.deadLetters.count} dead letters`);
    },
    close: () => system.terminate(),
  };
}

function spawnBare(n: number): Population {
  const actors = new Array(n);
  for (let i = 0; i < n; i++) actors[i] = createActor(logic).start();
  return {
    send: (i) => actors[i].send(INC),
    check: () => {},
    close: () => {
      for (const actor of actors) actor.stop();
    },
  };
}

const spawn = spec.impl === 'doyen' ? spawnDoyen : spawnBare;

async function tellAll(population: Population, targets: Uint32Array): Promise<number> {
  processed = 0;
  target = targets.length;
  const done = new Promise<void>((resolve) => (reached = resolve));
  const start = process.hrtime.bigint();
  for (let i = 0; i < targets.length; i++) population.send(targets[i]!);
  if (processed < target) await withTimeout(done, 120_000, `${spec!.impl} tells`);
  return targets.length / (Number(process.hrtime.bigint() - start) / 1e9);
}

function memory(): { heap: number; rss: number } {
  settleHeap();
  const { heapUsed, rss } = process.memoryUsage();
  return { heap: heapUsed, rss };
}

// Warm-up on a small population, thrown away: the JIT has seen spawn and send before the clock starts.
const warmN = Math.max(1_000, Math.min(20_000, Math.floor(spec.actors / 50)));
const warm = spawn(warmN);
await tellAll(warm, randomTargets(warmN * 2, warmN, 7));
warm.check();
warm.close();

const targets = randomTargets(spec.tells, spec.actors);
const before = memory();
const spawnStart = process.hrtime.bigint();
const population = spawn(spec.actors);
const spawnPerSec = spec.actors / (Number(process.hrtime.bigint() - spawnStart) / 1e9);
const idle = memory();
const tellPerSec = await tellAll(population, targets);
const used = memory();
const figures: PopulationFigures = {
  spawnPerSec,
  heapBytesPerActor: (idle.heap - before.heap) / spec.actors,
  rssBytesPerActor: (idle.rss - before.rss) / spec.actors,
  tellPerSec,
  heapBytesPerActorAfterTells: (used.heap - before.heap) / spec.actors,
};
// `population` is read after the last measurement, so no GC above may collect it early.
population.check();
process.send(figures);
process.on('disconnect', () => process.exit(0));
