// The floor under doyen's idle cost (bench scale): a process with nothing but ws and msgpackr that
// sends each of its targets one small msgpackr frame per interval, shaped like doyen's heartbeat
// batch, and decodes what its targets send it. Plain JavaScript (no tsx loader), so its RSS is the
// runtime's and the libraries', nothing more.
//   node raw-heartbeat-peer.mjs PORT TARGET_PORT,TARGET_PORT,… INTERVAL_MS
import { Packr } from 'msgpackr';
import { WebSocket, WebSocketServer } from 'ws';

const [port, targetList, intervalArg] = process.argv.slice(2);
const interval = Number(intervalArg);
const targets = (targetList ?? '').split(',').filter(Boolean).map(Number);
const packr = new Packr();
let received = 0;

const server = new WebSocketServer({ host: '127.0.0.1', port: Number(port), perMessageDeflate: false });
// the bench times a start from spawn to this line (the floor under doyen's start-up)
server.on('listening', () => process.stderr.write('{"listening":true}\n'));
server.on('connection', (socket) =>
  socket.on('message', (data) => {
    const batch = packr.unpack(data);
    if (Array.isArray(batch) && batch[0]?.[3]?.type === 'heartbeat.ping') received++;
  }),
);

const from = { host: '127.0.0.1', port: Number(port), system: 'scale', uid: 'c0ffee0123456789' };
const outbound = new Map();
function connect(target) {
  const socket = new WebSocket(`ws://127.0.0.1:${target}/`, { perMessageDeflate: false });
  socket.on('error', () => {});
  socket.on('close', () => setTimeout(() => connect(target), 200));
  outbound.set(target, socket);
}
// the others may not listen yet: dial once everyone had a moment to start
setTimeout(() => targets.forEach(connect), 1000);
setInterval(() => {
  for (const socket of outbound.values()) {
    if (socket.readyState !== WebSocket.OPEN) continue;
    const ping = { type: 'heartbeat.ping', from, version: 1 };
    socket.send(packr.pack([['/system/heartbeat-pulse', 'c0ffee0123456789', null, ping]]));
  }
}, interval);
// what it received, so the bench can tell a baseline that measured real traffic from one that never connected
process.on('SIGTERM', () => {
  process.stderr.write(`${JSON.stringify({ received })}\n`);
  process.exit(0);
});
