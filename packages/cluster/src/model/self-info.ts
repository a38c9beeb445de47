import type { UniqueNodeAddress } from '@doyen/core';
import type { NewMember } from './membership.js';

/** This node as its cluster protocols see it: the member it joins as, its key and its address. */
export interface SelfInfo extends NewMember {
  /** `host:port#uid` (`nodeKey`). */
  readonly key: string;
  readonly node: UniqueNodeAddress;
}
