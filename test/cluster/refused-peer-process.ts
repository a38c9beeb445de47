// Child process for connection-refused-sockets.test.ts: one cluster node on 127.0.0.1 (WsTransport and
// Cluster from the sources) that joins through the seed given on argv and prints one JSON line once up.
// The test kills it with SIGKILL or freezes it with SIGSTOP.
import { Cluster } from '../../packages/cluster/src/index.js';
import { nodeKey } from '../../packages/core/src/index.js';
import { WsTransport } from '../../packages/wire/src/index.js';

const [port, seedPort, secret] = process.argv.slice(2).map((a, i) => (i < 2 ? Number(a) : a)) as [
  number,
  number,
  string,
];
const transport = await WsTransport.start({ cluster: 'it', host: '127.0.0.1', port, wire: { secret } });
const cluster = Cluster.start(transport.system, { seeds: [{ host: '127.0.0.1', port: seedPort }] });
await cluster.whenUp();
process.stdout.write(`${JSON.stringify({ event: 'child.up', key: nodeKey(transport.system.node) })}\n`);
