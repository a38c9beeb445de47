import type { SbrMember } from './sbr-view.js';

/**
 * What the downing machine hears, from this node only (local messages, never on the wire): the
 * membership's view and the failure detector's reachability. Its decisions go back to the
 * membership as `sbr.execute` and `sbr.down-self` (see membership-machine.ts).
 */

/** Membership -> downing: what this node currently knows (sent after every change). */
export interface SbrViewMessage {
  readonly type: 'sbr.view';
  readonly selfKey: string;
  readonly version: number;
  /** The live members of the membership. */
  readonly members: readonly SbrMember[];
  /** subject -> observers currently reporting it unreachable. */
  readonly observations: Readonly<Record<string, readonly string[]>>;
}

/** Failure detector -> downing: the peers it monitors and currently reaches (sent on every change). */
export interface OwnReachabilityMessage {
  readonly type: 'sbr.own-reachability';
  readonly reachable: readonly string[];
}

export type DowningEvent = SbrViewMessage | OwnReachabilityMessage;
