import { nodeKey, type UniqueNodeAddress } from './address.js';

/** Node incarnations remembered at once; past it the table starts over (refs keep their objects). */
export const MAX_INTERNED_NODES = 1024;

/**
 * One node object per node incarnation for the refs a system makes. A ref parsed from a string
 * had a node object of its own, so 4,000 refs to the actors of 4 nodes were 4,000 node objects,
 * and every send read a cold one (the same-node check, the transport's association by node): in
 * `pnpm bench fanout` (1,000 actors a node, random targets) sharing them cut the CPU per message
 * by a third (4.3 and 3.9 µs to 2.8 and 2.6 in paired runs). Bounded, as restarts bring new
 * incarnations for as long as a node runs.
 */
export class NodeInterner {
  private readonly nodes = new Map<string, UniqueNodeAddress>();
  /**
   * The incarnation interned last: refs come in runs from one node (each ask's reply-to on an
   * entity's owner), and its key cost a string and a hash per ref. Equal fields, equal node.
   */
  private last: UniqueNodeAddress | undefined;

  intern(node: UniqueNodeAddress): UniqueNodeAddress {
    const last = this.last;
    if (last !== undefined && last.uid === node.uid && last.port === node.port && last.host === node.host)
      return last;
    const key = nodeKey(node);
    const known = this.nodes.get(key);
    if (known !== undefined) {
      this.last = known;
      return known;
    }
    if (this.nodes.size >= MAX_INTERNED_NODES) this.nodes.clear();
    // a literal of one shape, not the parser's spread: every interned node reads alike
    const interned: UniqueNodeAddress = { host: node.host, port: node.port, uid: node.uid };
    this.nodes.set(key, interned);
    this.last = interned;
    return interned;
  }

  /** Incarnations held (for tests). */
  get size(): number {
    return this.nodes.size;
  }
}
