import { oldestOf, SINGLETON_HOLDING } from '../model/member.js';
import { compareAddress, isCounted, type SbrDecisionKind, type SbrView, withRole } from './sbr-view.js';

/**
 * The Akka split-brain resolver strategies (seeds/003) as pure functions of one side's view.
 * Each returns what this side does; both sides of a clean partition run the same function on
 * mirrored views, and the rules are built so that at most one side keeps running.
 */
export type StrategyConfig =
  | { readonly strategy: 'keep-majority'; readonly role?: string }
  | { readonly strategy: 'static-quorum'; readonly quorumSize: number; readonly role?: string }
  | { readonly strategy: 'keep-oldest'; readonly downIfAlone: boolean; readonly role?: string }
  | { readonly strategy: 'down-all' };

export interface StrategyOutcome {
  readonly decision: Exclude<SbrDecisionKind, 'down-indirectly-connected'>;
  readonly reason: string;
}

const survive = (reason: string): StrategyOutcome => ({ decision: 'down-unreachable', reason });
const yieldSide = (reason: string): StrategyOutcome => ({ decision: 'down-reachable', reason });

function sides(view: SbrView, role: string | undefined) {
  const members = withRole(view.members, role);
  const reachable = members.filter((m) => !view.unreachable.has(m.key));
  const unreachable = members.filter((m) => view.unreachable.has(m.key));
  return { members, reachable, unreachable };
}

/**
 * keep-majority: the side with more members survives; on a tie the side with the lowest
 * address. Joining members are not counted on this side, but unreachable Joining members are
 * counted on the other side: they may have become Up there (the seed's edge case). Pessimistic
 * on both sides, so the worst case is that both sides go down, never that both stay.
 */
export function keepMajority(view: SbrView, role?: string): StrategyOutcome {
  const { reachable, unreachable } = sides(view, role);
  const ours = reachable.filter(isCounted);
  const theirs = unreachable; // joining included: possibly up over there
  if (ours.length > theirs.length) return survive(`majority ${ours.length} > ${theirs.length}`);
  if (ours.length < theirs.length) return yieldSide(`minority ${ours.length} < ${theirs.length}`);
  if (ours.length === 0) return yieldSide('no counted members on either side');
  // Equal sizes: keep the side with the lowest address. Our own joiners may be Up on nobody's
  // view yet, so only counted members compete for "lowest".
  const lowest = [...ours, ...theirs].sort((a, b) => compareAddress(a.address, b.address))[0]!;
  return view.unreachable.has(lowest.key)
    ? yieldSide(`tie ${ours.length} = ${theirs.length}, lowest address ${lowest.address} is over there`)
    : survive(`tie ${ours.length} = ${theirs.length}, lowest address ${lowest.address} is here`);
}

/**
 * static-quorum: survive while at least `quorumSize` members remain reachable. A cluster larger
 * than 2·quorum − 1 could split into two quorums, so then everything is downed.
 */
export function staticQuorum(view: SbrView, quorumSize: number, role?: string): StrategyOutcome {
  const { members, reachable } = sides(view, role);
  const counted = members.filter((m) => isCounted(m) || view.unreachable.has(m.key));
  if (counted.length > 2 * quorumSize - 1) {
    return { decision: 'down-all', reason: `${counted.length} members exceed 2·${quorumSize} − 1` };
  }
  const ours = reachable.filter(isCounted).length;
  return ours >= quorumSize
    ? survive(`${ours} reachable >= quorum ${quorumSize}`)
    : yieldSide(`${ours} reachable < quorum ${quorumSize}`);
}

/**
 * keep-oldest: the side with the oldest member survives (it runs the singletons). With
 * `downIfAlone`, an oldest cut off from everyone downs itself and the rest survive.
 */
export function keepOldest(view: SbrView, downIfAlone: boolean, role?: string): StrategyOutcome {
  const oldest = oldestOf(withRole(view.members, role), { statuses: SINGLETON_HOLDING });
  if (!oldest) return yieldSide('no oldest member');
  // "Alone" is judged pessimistically for both sides: our Joining members may not be Up
  // anywhere yet (they do not keep the oldest company), while unreachable ones may be Up over
  // there (they may). Two views that differ only in a joiner then still agree.
  const all = view.members;
  const reachableCounted = all.filter((m) => !view.unreachable.has(m.key) && isCounted(m));
  const unreachableAll = all.filter((m) => view.unreachable.has(m.key));
  if (!view.unreachable.has(oldest.key)) {
    if (downIfAlone && reachableCounted.length === 1 && unreachableAll.length > 0) {
      return yieldSide(`oldest ${oldest.address} is alone here (down-if-alone)`);
    }
    return survive(`oldest ${oldest.address} is here`);
  }
  if (downIfAlone && unreachableAll.length === 1 && reachableCounted.length > 0) {
    return survive(`oldest ${oldest.address} is alone over there (down-if-alone)`);
  }
  return yieldSide(`oldest ${oldest.address} is over there`);
}

export function decideStrategy(config: StrategyConfig, view: SbrView): StrategyOutcome {
  switch (config.strategy) {
    case 'keep-majority':
      return keepMajority(view, config.role);
    case 'static-quorum':
      return staticQuorum(view, config.quorumSize, config.role);
    case 'keep-oldest':
      return keepOldest(view, config.downIfAlone, config.role);
    case 'down-all':
      return { decision: 'down-all', reason: 'down-all strategy' };
  }
}
