// The soak bench's `--app` module (`doyen node --app bench/lib/soak-app.ts`): on every node, a small
// counter singleton asked through its proxy every SOAK_ASK_EVERY_MS, each outcome logged (the bench
// counts them from the logs), plus two periodic lines the bench reads:
//   soak.tally   asks sent, answered, failed and still pending, and the age of the oldest pending
//                one: an ask pending past its timeout is one left hanging;
//   soak.memory  heap and RSS after a full GC, so the figures measure what is retained, not
//                garbage that happened to be waiting for collection.
// The timers belong to the process, not to an incarnation: a node downed and restarted in place
// asks its new incarnation's proxy (setup hands it over), without a second timer.

import { getHeapSpaceStatistics } from 'node:v8';
import { assign, setup as machine } from 'xstate';
import type { ActorRef, DoyenNode, IncarnationInfo } from '../../packages/doyen/src/index.js';
import { settleHeap } from './settle-heap.js';
import {
  SOAK_ANSWERED_EVENT,
  SOAK_FAILED_EVENT,
  SOAK_MEMORY_EVENT,
  SOAK_SINGLETON,
  SOAK_TALLY_EVENT,
  soakAppSettings,
} from './soak-protocol.js';

type Added = { type: 'soak.added'; count: number };
type Add = { type: 'soak.add'; replyTo: ActorRef<Added> };

/** Counts the asks it answered (from 0 again after every failover: no snapshot is handed over). */
const counter = machine({ types: { context: {} as { count: number }, events: {} as Add } }).createMachine({
  context: { count: 0 },
  on: {
    'soak.add': {
      actions: [
        assign({ count: ({ context }) => context.count + 1 }),
        ({ context, event }) => event.replyTo.send({ type: 'soak.added', count: context.count }),
      ],
    },
  },
});

const settings = soakAppSettings(process.env);

let current: { node: DoyenNode; proxy: ActorRef<Add> } | undefined;
let started = false;
let seq = 0;
let answered = 0;
let failed = 0;
/** seq → when it was sent (performance.now()). */
const pending = new Map<number, number>();

function askOnce(): void {
  if (!current) return;
  const { node, proxy } = current;
  const n = ++seq;
  const sentAt = performance.now();
  pending.set(n, sentAt);
  let asked: Promise<Added>;
  try {
    asked = proxy.ask<Added>((replyTo) => ({ type: 'soak.add', replyTo }), {
      timeout: settings.askTimeoutMs,
    });
  } catch (error) {
    asked = Promise.reject(error);
  }
  asked.then(
    (reply) => {
      pending.delete(n);
      answered++;
      node.logger.info(
        {
          event: SOAK_ANSWERED_EVENT,
          seq: n,
          ms: Math.round(performance.now() - sentAt),
          count: reply.count,
        },
        'soak ask answered',
      );
    },
    (error: unknown) => {
      pending.delete(n);
      failed++;
      node.logger.info(
        {
          event: SOAK_FAILED_EVENT,
          seq: n,
          ms: Math.round(performance.now() - sentAt),
          error: error instanceof Error ? error.message : String(error),
        },
        'soak ask failed',
      );
    },
  );
}

let lastTallyAt = performance.now();
function tally(): void {
  const now = performance.now();
  let oldest = 0;
  for (const sentAt of pending.values()) oldest = Math.max(oldest, now - sentAt);
  // a frozen process (SIGSTOP) wakes up with every timer overdue: the gap says so, and the bench
  // does not judge a pending age measured across it
  const gapMs = Math.round(now - lastTallyAt);
  lastTallyAt = now;
  current?.node.logger.info(
    {
      event: SOAK_TALLY_EVENT,
      sent: seq,
      answered,
      failed,
      pending: pending.size,
      oldestPendingMs: Math.round(oldest),
      gapMs,
    },
    'soak tally',
  );
}

function memory(): void {
  settleHeap();
  const m = process.memoryUsage();
  // compiled code lives in the heap too: apart, so JIT warm-up is not taken for retained data
  const code = getHeapSpaceStatistics().find((s) => s.space_name === 'code_space')?.space_used_size ?? 0;
  current?.node.logger.info(
    {
      event: SOAK_MEMORY_EVENT,
      heapUsed: m.heapUsed,
      codeSpace: code,
      heapTotal: m.heapTotal,
      rss: m.rss,
      external: m.external,
      uptimeMs: Math.round(process.uptime() * 1000),
    },
    'soak memory',
  );
}

export function setup(node: DoyenNode, incarnation: IncarnationInfo): void {
  node.system.messageTypes.register(['soak.add', 'soak.added']);
  const proxy = node.singletons.register(SOAK_SINGLETON, counter) as unknown as ActorRef<Add>;
  current = { node, proxy };
  node.logger.info({ event: 'soak.setup', incarnation: incarnation.number }, 'soak app set up');
  if (started) return;
  started = true;
  setInterval(askOnce, settings.askEveryMs);
  setInterval(tally, settings.tallyEveryMs);
  setInterval(memory, settings.memoryEveryMs);
  memory();
}
