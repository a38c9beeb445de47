import { type Membership, memberKey } from '@doyen/cluster';
import type { PartitionTable } from '../partition-table.js';

export type TableRefusal = 'not-allocator-host' | 'unknown-owner';

/**
 * Why a table from `sender` may not be adopted by a node whose view is `view` (computed from a
 * membership this view has reached), or undefined when it may (pure). It must come from the
 * allocator's host in this view, `host`, or from an older member that is leaving (it still runs
 * the allocator until it has handed over, and publishes the table that moves partitions off
 * itself); any other member could hand out every partition. And every owner and backup it
 * names must be a member of this view: a table naming strangers is not of this cluster's making.
 */
export function tableRefusal(
  table: PartitionTable,
  sender: string,
  view: Membership,
  host: string | undefined,
): TableRefusal | undefined {
  if (!mayPublish(sender, view, host)) return 'not-allocator-host';
  const members = new Set(view.members.map(memberKey));
  return strangerIn(table, members) === undefined ? undefined : 'unknown-owner';
}

/** The first owner or backup of `table` that is not in `members`. */
export function strangerIn(table: PartitionTable, members: ReadonlySet<string>): string | undefined {
  for (const owner of table.owners) if (owner !== '' && !members.has(owner)) return owner;
  for (const backups of table.backups) for (const b of backups) if (!members.has(b)) return b;
  return undefined;
}

function mayPublish(sender: string, view: Membership, host: string | undefined): boolean {
  if (sender === host) return true;
  const member = view.members.find((m) => memberKey(m) === sender);
  if (!member || (member.status !== 'leaving' && member.status !== 'exiting')) return false;
  const hostMember = host === undefined ? undefined : view.members.find((m) => memberKey(m) === host);
  return hostMember === undefined || member.age < hostMember.age;
}
