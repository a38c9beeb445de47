// The raw ask baseline of the sharding bench's `--hot-path`: the optimum beside doyen's cold and active
// asks from another node, measured in the same run at the same rate with the same pacing. Child
// processes of bench/lib/raw-relay-node.ts on 127.0.0.1 (ports chosen at run time): an echo (the
// entity's node), a relay in front of it, and two generators, one asking the echo directly (doyen's
// topology: the load generator's node asks the owner, which answers it) and one through the relay
// (one more process on the way, as a generator outside the cluster asking a node that routes), and, with
// `echoes` > 1, a third asking that many echoes, each ask to the one its id hashes to (doyen's fan-out:
// the cold asks' ids spread over the hosting nodes, so each owner wakes for a fifth of them).
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { type IpcChild, startIpcChild } from './ipc-child.js';
import type { RawAskRequest, RawAskResult } from './raw-relay-node.js';
import { withTimeout } from './timeout.js';

const script = fileURLToPath(new URL('./raw-relay-node.ts', import.meta.url));

export interface RawAskBaseline {
  /** Generator → echo → generator: doyen's cold ask's topology. */
  direct(request: RawAskRequest): Promise<RawAskResult>;
  /** Generator → relay → echo → relay → generator. */
  relayed(request: RawAskRequest): Promise<RawAskResult>;
  /** Generator → one of `echoes` echo processes by the id's hash → generator (undefined with one echo). */
  spread?(request: RawAskRequest): Promise<RawAskResult>;
  /** The processes each way crosses, by role (for their CPU per ask). */
  readonly pids: {
    readonly direct: Readonly<Record<string, readonly number[]>>;
    readonly relayed: Readonly<Record<string, readonly number[]>>;
    readonly spread?: Readonly<Record<string, readonly number[]>>;
  };
  stop(): Promise<void>;
}

async function askThrough(generator: IpcChild<unknown>, request: RawAskRequest): Promise<RawAskResult> {
  const answered = once(generator.child, 'message') as Promise<[RawAskResult]>;
  generator.child.send(request);
  const [result] = await withTimeout(answered, 60_000, 'the raw ask generator');
  return result;
}

const pid = (c: IpcChild<unknown>) => c.child.pid ?? -1;

export async function startRawAskBaseline(echoes = 1): Promise<RawAskBaseline> {
  const started: IpcChild<unknown>[] = [];
  const stop = async () => {
    await Promise.all(started.splice(0).map((c) => c.stop()));
  };
  try {
    const echo = await startIpcChild<{ port: number }>(script, 'raw echo', { RAW_RELAY_ROLE: 'echo' });
    started.push(echo);
    const relay = await startIpcChild<{ port: number }>(script, 'raw relay', {
      RAW_RELAY_ROLE: 'relay',
      RAW_RELAY_UPSTREAM: String(echo.ready.port),
    });
    started.push(relay);
    const direct = await startIpcChild(script, 'raw generator (direct)', {
      RAW_RELAY_ROLE: 'generator',
      RAW_RELAY_TARGET: String(echo.ready.port),
    });
    started.push(direct);
    const relayed = await startIpcChild(script, 'raw generator (relayed)', {
      RAW_RELAY_ROLE: 'generator',
      RAW_RELAY_TARGET: String(relay.ready.port),
    });
    started.push(relayed);
    const spread = echoes > 1 ? [echo] : [];
    while (spread.length > 0 && spread.length < echoes) {
      const another = await startIpcChild<{ port: number }>(script, 'raw echo', { RAW_RELAY_ROLE: 'echo' });
      started.push(another);
      spread.push(another);
    }
    const spreadGenerator =
      spread.length > 0
        ? await startIpcChild(script, 'raw generator (spread)', {
            RAW_RELAY_ROLE: 'generator',
            RAW_RELAY_TARGET: spread.map((e) => e.ready.port).join(','),
          })
        : undefined;
    if (spreadGenerator) started.push(spreadGenerator);
    return {
      direct: (request) => askThrough(direct, request),
      relayed: (request) => askThrough(relayed, request),
      ...(spreadGenerator
        ? { spread: (request: RawAskRequest) => askThrough(spreadGenerator, request) }
        : {}),
      pids: {
        direct: { generator: [pid(direct)], owners: [pid(echo)] },
        relayed: { generator: [pid(relayed)], relay: [pid(relay)], owners: [pid(echo)] },
        ...(spreadGenerator
          ? { spread: { generator: [pid(spreadGenerator)], owners: spread.map(pid) } }
          : {}),
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
