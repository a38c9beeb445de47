// An ask's reply-to travels twice in a frame (as the sender and inside the message): the decoder
// parses an address once per run of the same address within one decode (session 37), and never
// hands out a ref decoded in an earlier frame, since the local actor it names may have stopped.
import { describe, expect, it } from 'vitest';
import { ActorSystem } from '../../packages/core/src/index.js';
import { decodePlain, encodePlain, withDecodingSystem } from '../../packages/wire/src/index.js';

function countingSystem(): { system: ActorSystem; parsed: string[] } {
  const system = new ActorSystem({ cluster: 'memo', host: '127.0.0.1', port: 9, uid: 'self1' });
  const parsed: string[] = [];
  const refFor = system.refFor.bind(system);
  system.refFor = ((address: Parameters<typeof refFor>[0]) => {
    if (typeof address === 'string') parsed.push(address);
    return refFor(address);
  }) as typeof system.refFor;
  return { system, parsed };
}

const REPLY_TO = 'doyen://memo@127.0.0.1:7/temp/ask-1#peer1';
const OTHER = 'doyen://memo@127.0.0.1:7/user/other#peer1';

describe('refs decoded from a frame', () => {
  it('the same address twice in one frame is parsed once, into one ref; another address is parsed apart', () => {
    const { system, parsed } = countingSystem();
    const source = new ActorSystem({ cluster: 'memo', host: '127.0.0.1', port: 7, uid: 'peer1' });
    const replyTo = source.refFor(REPLY_TO);
    const other = source.refFor(OTHER);
    const frame = encodePlain([replyTo, { type: 'q', replyTo }, other, { type: 'q', replyTo: other }]);
    const [sender, message, third, fourth] = withDecodingSystem(system, () => decodePlain(frame)) as [
      { id: string },
      { replyTo: { id: string } },
      { id: string },
      { replyTo: { id: string } },
    ];
    expect(sender.id).toBe(REPLY_TO);
    expect(message.replyTo).toBe(sender);
    expect(third.id).toBe(OTHER);
    expect(fourth.replyTo).toBe(third);
    expect(parsed).toEqual([REPLY_TO, OTHER]);
  });

  it('a ref is not reused from an earlier frame: each decode parses its addresses again', () => {
    const { system, parsed } = countingSystem();
    const source = new ActorSystem({ cluster: 'memo', host: '127.0.0.1', port: 7, uid: 'peer1' });
    const frame = encodePlain([source.refFor(REPLY_TO)]);
    const [first] = withDecodingSystem(system, () => decodePlain(frame)) as [object];
    const [second] = withDecodingSystem(system, () => decodePlain(frame)) as [object];
    expect(second).not.toBe(first);
    expect(parsed).toEqual([REPLY_TO, REPLY_TO]);
  });
});
