// Network partitions between in-process doyen nodes on real sockets. Every node's transport is a WsTransport
// whose `send` is the only way a message leaves the node (the actor system calls `transport.send` for every
// remote message), and every node sends only on the connections it dialled itself. So a drop filter in
// `send`, applied to both directions of a link, cuts the link completely: no heartbeat, no membership
// message, no probe crosses it. The TCP connections stay open and silent, as behind a black-holing firewall,
// and carry traffic again the moment the filter is lifted (heal).
//
// The filter is installed once on WsTransport.prototype, so it also covers the new incarnations a node starts
// when it is merged or restarted (startNode creates a new transport at the same port). Links are identified
// by port: every node of the bench is on 127.0.0.1.
import { type Envelope, type Lane, type UniqueNodeAddress, WsTransport } from './doyen.js';

const blocked = new Set<string>();
let installed = false;
let dropped = 0;

const link = (fromPort: number, toPort: number) => `${fromPort}>${toPort}`;

function install(): void {
  if (installed) return;
  installed = true;
  const send = WsTransport.prototype.send;
  WsTransport.prototype.send = function (
    this: WsTransport,
    node: UniqueNodeAddress,
    envelope: Envelope,
    lane: Lane,
  ): void {
    if (blocked.size > 0 && blocked.has(link(this.port, node.port))) {
      dropped++;
      return;
    }
    send.call(this, node, envelope, lane);
  };
}

/** Cuts every link between a node of `a` and a node of `b`, both directions (ports). */
export function partition(a: readonly number[], b: readonly number[]): void {
  install();
  for (const x of a) {
    for (const y of b) {
      blocked.add(link(x, y));
      blocked.add(link(y, x));
    }
  }
}

/** Lifts every cut. */
export function heal(): void {
  blocked.clear();
}

/** Messages the filter has dropped since the process started. */
export function droppedMessages(): number {
  return dropped;
}
