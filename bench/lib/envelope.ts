// The message shape both sides of the raw ws baselines agree on: small, like an actor tell on the wire.
export type Envelope = { to: string; msg: { type: string; n: number } };

export function incEnvelope(n: number): Envelope {
  return { to: '/user/counter', msg: { type: 'inc', n } };
}
