// The messaging bench's mutual-TLS section: remote tell between two processes over `wss` with certificates
// from a cluster CA (made with openssl at start, as the tests make them), beside plaintext doyen and raw ws
// measured in the same runs, and the time from a first send to a new node to the message's arrival
// (TCP connect, TLS handshake, WebSocket upgrade, HMAC handshake, first frame) with and without TLS.
// Its ceiling is raw ws + msgpackr over the same mutual TLS (`wss`, certificates of the same CA).
// `pnpm bench messaging tls` runs only this section.
import { TestPki } from '../../test/support/certificates.js';
import { type RemoteRateOptions, rawWsMsgpackrRemoteRate } from './baselines.js';
import { BENCH_CLUSTER, BENCH_SECRET, CHILD_MESSAGE_TYPES, type Inc } from './bench-messages.js';
import { type WireConfig, WsTransport } from './doyen.js';
import { DoyenRemoteBench } from './doyen-remote.js';
import { median } from './stats.js';
import { withTimeout } from './timeout.js';
import { tlsEnv } from './tls-bench-env.js';

/** The argument of `pnpm bench messaging tls`. */
export const TLS_ONLY_ARG = 'tls';
/** New connections timed per mode and run; the figure is their median. */
const HANDSHAKES = 20;

type Unit = 'msgs/s' | 'ms';
type Figures = Record<string, number>;

export interface TlsSection {
  readonly title: string;
  readonly figures: { key: string; label: string; unit: Unit }[];
  warmup(): Promise<void>;
  measure(): Promise<Figures>;
  readonly comparisons: {
    key: string;
    label: string;
    value: (run: Figures) => number;
    target: { op: '>='; bound: number } | undefined;
    unit: 'ratio';
  }[];
  close(): Promise<void>;
}

export function tlsMessagingSection(options: { messages: number; batchBytes: number }): TlsSection {
  let pki: TestPki | undefined;
  let plain: DoyenRemoteBench | undefined;
  let secure: DoyenRemoteBench | undefined;
  let receivers: HandshakeReceivers | undefined;
  let senderTls: WireConfig['tls'];
  let rawTls: RemoteRateOptions['tls'];
  const started = () => {
    if (!plain || !secure || !receivers) throw new Error('TLS bench not started');
    return { plain, secure, receivers };
  };
  const ratio = (a: string, b: string) => (run: Figures) => run[a]! / run[b]!;
  return {
    title: '8. remote tell over mutual TLS (wss), two processes on 127.0.0.1',
    figures: [
      { key: 'tlsSectionRawWsPerSec', label: 'raw ws+msgpackr, ≤64 KiB frames', unit: 'msgs/s' },
      {
        key: 'tlsSectionRawTlsPerSec',
        label: 'raw wss (mutual TLS)+msgpackr, ≤64 KiB frames',
        unit: 'msgs/s',
      },
      { key: 'tlsSectionPlainTellPerSec', label: 'doyen remote tell, plaintext ws', unit: 'msgs/s' },
      { key: 'tlsRemoteTellPerSec', label: 'doyen remote tell, mutual TLS', unit: 'msgs/s' },
      {
        key: 'plainFirstDeliveryMs',
        label: `new connection -> first message, plaintext (median of ${HANDSHAKES})`,
        unit: 'ms',
      },
      {
        key: 'tlsFirstDeliveryMs',
        label: `new connection -> first message, mutual TLS (median of ${HANDSHAKES})`,
        unit: 'ms',
      },
    ],
    warmup: async () => {
      pki = TestPki.create();
      const tls = (name: string) => pki!.tlsFor(pki!.issue(name));
      plain = await DoyenRemoteBench.start();
      secure = await DoyenRemoteBench.start({ tls: tls('bench-parent') }, tlsEnv(tls('bench-child')));
      receivers = await HandshakeReceivers.start(tls('bench-receiver'));
      senderTls = tls('bench-sender');
      rawTls = { sender: tls('bench-raw-sender'), receiver: tls('bench-raw-receiver') };
      await plain.tellRate(200_000);
      await secure.tellRate(200_000);
      await receivers.firstDeliveryMs({}, 5);
      await receivers.firstDeliveryMs({ tls: senderTls }, 5);
    },
    measure: async () => {
      const { plain, secure, receivers } = started();
      return {
        tlsSectionRawWsPerSec: await rawWsMsgpackrRemoteRate(options),
        tlsSectionRawTlsPerSec: await rawWsMsgpackrRemoteRate({ ...options, tls: rawTls }),
        tlsSectionPlainTellPerSec: await plain.tellRate(options.messages),
        tlsRemoteTellPerSec: await secure.tellRate(options.messages),
        plainFirstDeliveryMs: await receivers.firstDeliveryMs({}, HANDSHAKES),
        tlsFirstDeliveryMs: await receivers.firstDeliveryMs({ tls: senderTls }, HANDSHAKES),
      };
    },
    comparisons: [
      {
        key: 'tlsVsPlainTellRatio',
        label: 'doyen remote tell, mutual TLS / plaintext',
        value: ratio('tlsRemoteTellPerSec', 'tlsSectionPlainTellPerSec'),
        target: { op: '>=', bound: 0.7 },
        unit: 'ratio',
      },
      {
        key: 'tlsVsRawTlsTellRatio',
        label: 'doyen remote tell, mutual TLS / raw wss+msgpackr, mutual TLS',
        value: ratio('tlsRemoteTellPerSec', 'tlsSectionRawTlsPerSec'),
        target: { op: '>=', bound: 0.8 },
        unit: 'ratio',
      },
      {
        key: 'tlsVsRawWsTellRatio',
        label: '(context) doyen remote tell, mutual TLS / raw ws',
        value: ratio('tlsRemoteTellPerSec', 'tlsSectionRawWsPerSec'),
        target: undefined,
        unit: 'ratio',
      },
      {
        key: 'tlsVsPlainFirstDeliveryRatio',
        label: '(context) new connection -> first message, mutual TLS / plaintext',
        value: ratio('tlsFirstDeliveryMs', 'plainFirstDeliveryMs'),
        target: undefined,
        unit: 'ratio',
      },
    ],
    close: async () => {
      await Promise.all([plain?.close(), secure?.close(), receivers?.close()]);
      pki?.remove();
    },
  };
}

/**
 * Two nodes in this process, one plaintext and one with mutual TLS, each with a function actor that
 * resolves the waiting sender: a fresh sender node per connection times its first message.
 */
class HandshakeReceivers {
  private arrived: (() => void) | undefined;

  private constructor(
    private readonly plain: WsTransport,
    private readonly secure: WsTransport,
  ) {
    for (const t of [plain, secure]) {
      t.system.messageTypes.register([...CHILD_MESSAGE_TYPES]);
      t.system.functionRef('first', () => this.arrived?.(), 'user');
    }
  }

  static async start(tls: WireConfig['tls']): Promise<HandshakeReceivers> {
    const plain = await startNode({});
    const secure = await startNode({ tls });
    return new HandshakeReceivers(plain, secure);
  }

  /** Median ms from the first send of a new node to the message's arrival, over `rounds` new nodes. */
  async firstDeliveryMs(wire: Partial<WireConfig>, rounds: number): Promise<number> {
    const receiver = wire.tls ? this.secure : this.plain;
    const target = receiver.system.lookup('/user/first')!.id;
    const times: number[] = [];
    for (let i = 0; i < rounds; i++) {
      const sender = await startNode(wire);
      try {
        const arrived = new Promise<void>((resolve) => (this.arrived = resolve));
        const start = performance.now();
        sender.system.refFor<Inc>(target).send({ type: 'bench.inc', n: 0 });
        await withTimeout(arrived, 10_000, 'a first message over a new connection');
        times.push(performance.now() - start);
      } finally {
        await sender.close(0);
      }
    }
    return median(times);
  }

  async close(): Promise<void> {
    await Promise.all([this.plain.close(), this.secure.close()]);
  }
}

function startNode(wire: Partial<WireConfig>): Promise<WsTransport> {
  return WsTransport.start({
    cluster: BENCH_CLUSTER,
    host: '127.0.0.1',
    port: 0,
    wire: { secret: BENCH_SECRET, ...wire },
  });
}
