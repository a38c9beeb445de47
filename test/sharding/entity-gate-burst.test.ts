// The cell's gate (`SpawnOptions.gate`, what sharded fast-path entities use to read the owner lease
// before each turn, issue 29) is read before every message the actor processes, also in a burst of
// tells from outside any actor, where the dispatcher otherwise hands each next message to the actor
// on the sender's stack (`runInCaller`) without a turn: a gated actor never runs a message there.
// Positive control: the same burst to an actor without a gate does process messages in its
// sender's call after the flag flipped (the path the gate must not be bypassed by).
import { afterEach, describe, expect, it } from 'vitest';
import { fromTransition } from 'xstate';
import { type ActorRef, ActorSystem, type Message } from '../../packages/core/src/index.js';

const DRAIN_AT = 32;

let current: ActorSystem | undefined;
afterEach(() => {
  current?.terminate();
  current = undefined;
});

function burstAcrossAFlip(gated: boolean) {
  const system = new ActorSystem({
    cluster: 'test',
    host: '127.0.0.1',
    port: 1,
    dispatcher: { drainBacklogAt: DRAIN_AT },
  });
  current = system;
  const processed: number[] = [];
  let closed = false;
  let kept: number[] = [];
  let reads = 0;
  let ref: ActorRef | undefined;
  ref = system.spawn(
    fromTransition((count: number, event: Message) => {
      processed.push((event as Message & { n: number }).n);
      return count + 1;
    }, 0),
    {
      name: 'gated',
      ...(gated
        ? {
            gate: () => {
              reads++;
              if (!closed) return true;
              // as the region does on a lapse: stop, keeping what was queued
              kept = system.stopKeepingMailbox(ref!).map((d) => (d.message as Message & { n: number }).n);
              return false;
            },
          }
        : {}),
    },
  );
  let processedAtFlip = -1;
  // one synchronous burst from outside any actor: the flag flips half way (the lease lapses)
  for (let n = 0; n < 200; n++) {
    if (n === 100) {
      closed = true;
      processedAtFlip = processed.length;
    }
    ref.send({ type: 'inc', n } as Message);
  }
  return { processed, processedAtFlip, kept, reads: () => reads };
}

describe('a gated actor reads its gate before every message it processes, in a burst too', () => {
  it('nothing is processed after the gate closes; what was queued is kept, in order', async () => {
    const t = burstAcrossAFlip(true);
    // the burst ran turns in the caller, each behind a gate read
    expect(t.processedAtFlip).toBeGreaterThan(0);
    expect(t.reads()).toBeGreaterThan(0);
    await new Promise((resolve) => setImmediate(resolve));
    expect(t.processed.length).toBe(t.processedAtFlip);
    expect(t.processed).toEqual(Array.from({ length: t.processedAtFlip }, (_, k) => k));
    // every message sent before the gate's refusal and not processed was kept, in order
    expect(t.kept.length).toBeGreaterThan(0);
    expect(t.kept).toEqual(Array.from({ length: t.kept.length }, (_, k) => t.processedAtFlip + k));
  });

  it('positive control: without a gate the burst goes on being processed in the caller after the flip', async () => {
    const t = burstAcrossAFlip(false);
    expect(t.processed.length).toBeGreaterThan(t.processedAtFlip);
    await new Promise((resolve) => setImmediate(resolve));
    expect(t.processed.length).toBe(200);
  });
});
