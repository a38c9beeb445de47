import { memberKey } from '../../packages/cluster/src/index.js';

/** Member n of the membership tests: 10.0.0.n:2552, uid `un`, named `nn`, no roles. */
export const node = (n: number) => ({
  address: `10.0.0.${n}:2552`,
  uid: `u${n}`,
  name: `n${n}`,
  roles: [] as string[],
});

/** Member n's key (`memberKey`). */
export const key = (n: number) => memberKey(node(n));
