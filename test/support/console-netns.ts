/**
 * A one-way cut for the console's netns test: nftables in the two hosts' namespaces drop the
 * traffic of `from`'s wire lane to `to` (the connections `from` dials to `to`'s cluster port),
 * both ways, and nothing else. `from`'s heartbeats and gossip stop reaching `to` while `to`'s
 * still reach `from` over its own lane.
 *
 * Why not drop every IPv4 packet from `from` to `to` (Topology.dropOneWay)? Each node sends over
 * a TCP connection it dialled itself, and TCP needs the other direction for its ACKs: with one
 * direction of IP dropped, both nodes' connections stall and each observes the other
 * unreachable — two cells, which is a symmetric cut as far as the failure detector can tell.
 */
import { execFile } from 'node:child_process';
import { NETNS_CLUSTER_PORT, type NetnsHost } from './netns.js';

const TABLE = 'dyn_console_lane';

function nft(ns: string, script: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      'ip',
      ['netns', 'exec', ns, 'nft', '-f', '-'],
      { timeout: 10_000 },
      (error, _o, stderr) =>
        error ? reject(new Error(`nft in ${ns}: ${stderr || error.message}`)) : resolve(),
    );
    child.stdin?.end(script);
  });
}

/** One atomic nftables table per host: its rules replace any earlier ones of this helper there. */
function table(chains: string[]): string {
  return [
    `table inet ${TABLE} {}`,
    `delete table inet ${TABLE}`,
    `table inet ${TABLE} {`,
    ...chains,
    '}',
    '',
  ].join('\n');
}

/** Drops `from`'s lane to `to` (see the file comment). Both hosts need nftables. */
export async function dropLane(from: NetnsHost, to: NetnsHost): Promise<void> {
  const port = NETNS_CLUSTER_PORT;
  await Promise.all([
    // the dialling side: nothing out to the peer's cluster port, nothing back from it
    nft(
      from.ns,
      table([
        `  chain output { type filter hook output priority -10; policy accept; ip daddr ${to.ip} tcp dport ${port} drop; }`,
        `  chain input { type filter hook input priority -10; policy accept; ip saddr ${to.ip} tcp sport ${port} drop; }`,
      ]),
    ),
    // the listening side: the same connection, seen from its end
    nft(
      to.ns,
      table([
        `  chain input { type filter hook input priority -10; policy accept; ip saddr ${from.ip} tcp dport ${port} drop; }`,
        `  chain output { type filter hook output priority -10; policy accept; ip daddr ${from.ip} tcp sport ${port} drop; }`,
      ]),
    ),
  ]);
}

/** Removes the lane rules of these hosts. */
export async function healLanes(hosts: readonly NetnsHost[]): Promise<void> {
  await Promise.all(hosts.map((h) => nft(h.ns, `table inet ${TABLE} {}\ndelete table inet ${TABLE}\n`)));
}
