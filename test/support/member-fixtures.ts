import {
  addJoiner,
  formCluster,
  type Membership,
  memberKey,
  setStatus,
} from '../../packages/cluster/src/index.js';

/** Member n of the membership tests: 10.0.0.n:2552, uid `un`, named `nn`, no roles. */
export const node = (n: number) => ({
  address: `10.0.0.${n}:2552`,
  uid: `u${n}`,
  name: `n${n}`,
  roles: [] as string[],
});

/** Member n's key (`memberKey`). */
export const key = (n: number) => memberKey(node(n));

/** A membership of members 1..count, all up, formed by 1 and grown one join at a time. */
export function grown(count: number): Membership {
  let m = formCluster(node(1));
  for (let i = 2; i <= count; i++) m = setStatus(addJoiner(m, node(i)).membership, [key(i)], 'up');
  return m;
}
