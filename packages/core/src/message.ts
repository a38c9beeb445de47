/** Every message is a plain object with a `type` discriminant, namespaced by protocol (`membership.join`). */
export interface Message {
  readonly type: string;
}

export function isMessage(value: unknown): value is Message {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    typeof (value as { type?: unknown }).type === 'string'
  );
}
