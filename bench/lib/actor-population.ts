// Runs one actor population (actor-population-child.ts) in a fresh process and returns its figures: a
// process per population so each memory figure starts from an empty heap and an RSS nothing else grew.
import { fileURLToPath } from 'node:url';
import { startIpcChild } from './ipc-child.js';

export type PopulationCase = {
  impl: 'doyen' | 'bare';
  logic: 'transition' | 'machine';
  actors: number;
  /** Tells to random targets after the spawn (the same seeded sequence for both impls). */
  tells: number;
};

export type PopulationFigures = {
  spawnPerSec: number;
  /** Heap growth over the population, idle (nothing told yet), after a full GC, per actor. */
  heapBytesPerActor: number;
  /** RSS growth over the population, idle, per actor (includes V8's free space and fragmentation). */
  rssBytesPerActor: number;
  /** Tells to random targets per second, timed until the last one was processed. */
  tellPerSec: number;
  /** Heap growth per actor once every actor has had its share of the tells (used mailboxes). */
  heapBytesPerActorAfterTells: number;
};

const script = fileURLToPath(new URL('./actor-population-child.ts', import.meta.url));

/** A million bare xstate actors take ~3.3 GB: past Node 20's default old space on a small machine. */
const HEAP_MB = 12_288;

export async function measurePopulation(spec: PopulationCase): Promise<PopulationFigures> {
  const { ready, stop } = await startIpcChild<PopulationFigures>(
    script,
    `actor population ${spec.impl} ${spec.logic} ×${spec.actors}`,
    {
      ACTOR_POPULATION: JSON.stringify(spec),
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --max-old-space-size=${HEAP_MB}`.trim(),
    },
    // spawn, tells and four full GCs of a multi-GB heap on a shared machine
    600_000,
  );
  await stop();
  return ready;
}
