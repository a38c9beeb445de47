// Micro-benchmark of the steps an owner takes per remote ask frame (issue 29, cold ask from another node):
// the frame as the asking node encodes it (one ask: route [to, reply address], message with its reply-to
// ref), then on the owner: the scanner + msgpackr decode (with the ref extension), the header's routes,
// the message's admission. One process, no sockets: ns per step, the best of several runs.
//   node --conditions=@doyen/source --import tsx bench/lib/remote-ask-decode-micro.ts [iterations]
import {
  ActorSystem,
  BatchDecoder,
  BatchEncoder,
  EnvelopeMemo,
  FrameScanner,
  KnownSenders,
  type Message,
  readBatchHeader,
  readMessage,
} from './doyen.js';

const iterations = Number(process.argv[2] ?? 200_000);
const owner = new ActorSystem({ cluster: 'bench', host: '127.0.0.1', port: 7001, uid: 'owner1' });
const asker = new ActorSystem({ cluster: 'bench', host: '127.0.0.1', port: 7002, uid: 'asker1' });
owner.messageTypes.register(['bench.ping']);
const origin = { host: '127.0.0.1', port: 7002, uid: 'asker1' };
const target = asker.refFor(`doyen://bench@127.0.0.1:7001/user/echo#owner1`);

const encoder = new BatchEncoder();
const frames: Buffer[] = [];
for (let n = 0; n < 4096; n++) {
  const path = `/temp/ask-${(1000 + n).toString(36)}`;
  const replyTo = asker.refFor(`doyen://bench@127.0.0.1:7002${path}#asker1`);
  frames.push(
    encoder.encodeEnvelopes([
      {
        to: target.path,
        toUid: 'owner1',
        from: replyTo.id,
        message: { type: 'bench.ping', n, replyTo } as Message,
      },
    ]),
  );
}

const decoder = new BatchDecoder(32);
const senders = new KnownSenders();
const memo = new EnvelopeMemo();
const refuse = (r: { reason: string; detail: string }) => {
  throw new Error(`refused: ${r.reason} ${r.detail}`);
};
// the first frame defines the record: decode it once outside the timing, then time the rest in order
// (each later frame references the record)
const decoded: unknown[][] = [];
let sink = 0;

function time(label: string, step: (i: number) => void): number {
  let best = Number.POSITIVE_INFINITY;
  for (let run = 0; run < 5; run++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < iterations; i++) step(i);
    const ns = Number(process.hrtime.bigint() - t0) / iterations;
    best = Math.min(best, ns);
  }
  console.log(JSON.stringify({ step: label, nsPerAsk: Math.round(best) }));
  return best;
}

decoded.push(decoder.decode(owner, frames[0]!) as unknown[]);
for (let i = 1; i < frames.length; i++) decoded.push(decoder.decode(owner, frames[i]!) as unknown[]);
const decode = time('decode (scan + unpack + reply-to ref)', (i) => {
  const f = decoder.decode(owner, frames[1 + (i % (frames.length - 1))]!) as unknown[];
  sink += f.length;
});
const scanner = new FrameScanner({ records: true, actorRefs: true, maxDepth: 32 });
scanner.check(frames[0]!);
time('  of which the scanner', (i) => {
  scanner.check(frames[1 + (i % (frames.length - 1))]!);
});
const replyTo = decoded[1]![3] as { replyTo: { id: string } };
time('  of which the reply-to ref (refFor)', () => {
  sink += owner.refFor(replyTo.replyTo.id).path.length;
});
const header = time('header (toUid, routes, sender check)', (i) => {
  const h = readBatchHeader(owner, decoded[1 + (i % (decoded.length - 1))]!, origin, senders, refuse);
  sink += h!.routes.length;
});
const message = time('message (admission)', (i) => {
  const m = readMessage(owner, decoded[1 + (i % (decoded.length - 1))]![3], origin, memo, refuse);
  sink += m ? 1 : 0;
});
// the owner's reply: one envelope to the asker's reply address, on the owner's own connection
const replyEncoder = new BatchEncoder();
const reply = time('reply encode', (i) => {
  const m = decoded[1 + (i % (decoded.length - 1))]![3] as { n: number; replyTo: { path: string } };
  sink += replyEncoder.encodeEnvelopes([
    {
      to: m.replyTo.path,
      toUid: 'asker1',
      from: undefined,
      message: { type: 'bench.pong', n: m.n } as Message,
    },
  ]).length;
});
console.log(
  JSON.stringify({
    iterations,
    replyNs: Math.round(reply),
    totalNsPerAsk: Math.round(decode + header + message),
    sink: sink > 0,
  }),
);
