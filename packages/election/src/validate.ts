import { type Message, type MessageSchema, type Read, read, schema } from '@doyen/core';

/** Field readers of election messages: bounded, so a hostile peer cannot make us spin. */
export const address = read.address;
export const count = read.count;
export const flag = read.boolean;
export const time = read.time;
export const nullOrAddress = read.nullable(read.address);
export const addressList = (max = 10_000) => read.list(read.address, max);

/**
 * An election message, rebuilt from its fields. Every one names its sender in `from`, and a
 * node speaks only for itself: `from` must be the node its connection authenticated as, and one
 * of this node's election peers (`election-peer`, installed by the running election).
 */
export function electionMessage(
  fields: { readonly from: Read<string> } & Record<string, Read<unknown>>,
): MessageSchema<Message & { readonly from: string }> {
  return schema<Message & { readonly from: string }>(fields as never, (m) => [m.from], 'election-peer');
}
