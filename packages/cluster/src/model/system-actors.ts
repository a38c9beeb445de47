/**
 * The system actors of a cluster node: each one's name (it is spawned under `/system` with it)
 * and its path (where other nodes and this node's other actors send to it). Named here once, so
 * no file spells a path by hand or cuts a name out of one.
 */
export const SYSTEM_ACTOR_NAMES = {
  /** The membership machine: joins, updates, acks, reachability reports, downing decisions. */
  membership: 'membership',
  /** The failure detector machine: memberships in, changes of reachability out. */
  heartbeat: 'heartbeat',
  /** The heartbeater's function ref: pings and pongs, off the machine's path. */
  heartbeatPulse: 'heartbeat-pulse',
  /** The split-brain resolver (downing machine). */
  downing: 'downing',
  /** The split-brain checker: probes and merges sub-clusters under `auto` downing. */
  splitBrainChecker: 'split-brain-checker',
  /** The receptionist: service registrations and listings. */
  receptionist: 'receptionist',
} as const;

export type SystemActor = keyof typeof SYSTEM_ACTOR_NAMES;

/** The path of a system actor: `/system/<name>`. */
export function systemActorPath<A extends SystemActor>(
  actor: A,
): `/system/${(typeof SYSTEM_ACTOR_NAMES)[A]}` {
  return `/system/${SYSTEM_ACTOR_NAMES[actor]}`;
}

export const MEMBERSHIP_PATH = systemActorPath('membership');
export const HEARTBEAT_PATH = systemActorPath('heartbeat');
export const HEARTBEAT_PULSE_PATH = systemActorPath('heartbeatPulse');
export const DOWNING_PATH = systemActorPath('downing');
export const SPLIT_BRAIN_CHECKER_PATH = systemActorPath('splitBrainChecker');
export const RECEPTIONIST_PATH = systemActorPath('receptionist');
