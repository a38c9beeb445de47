import type { Message } from '@doyen/core';

/** Field checks for messages from the network: bounded, so a hostile peer cannot make us spin. */
export const isInt = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
export const isBool = (v: unknown): v is boolean => typeof v === 'boolean';
export const isAddress = (v: unknown): v is string =>
  typeof v === 'string' && v.length > 0 && v.length <= 300 && /:\d{1,5}$/.test(v);
export const isOptionalAddress = (v: unknown) => v === undefined || v === null || isAddress(v);
export const isAddressList =
  (max = 10_000) =>
  (v: unknown) =>
    Array.isArray(v) && v.length <= max && v.every(isAddress);

/** A validator for `MessageTypes.register` from per-field checks. */
export function fields(checks: Record<string, (v: unknown) => boolean>) {
  return (message: Message): string | undefined => {
    const m = message as unknown as Record<string, unknown>;
    for (const [field, test] of Object.entries(checks)) if (!test(m[field])) return `bad field ${field}`;
    return undefined;
  };
}
