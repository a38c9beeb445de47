// Helpers of the tests that drive a protocol machine alone over the paths xstate/graph finds.

/** A state value as one dotted name (`handingOver.finishing.measuring`), parallel regions joined by commas. */
export function stateName(value: unknown): string {
  return typeof value === 'string'
    ? value
    : Object.entries(value as Record<string, unknown>)
        .map(([k, v]) => `${k}.${stateName(v)}`)
        .join();
}

/** The event xstate raises when `delay` runs out in the state `stateId` (`machine.state.child`). */
export function delayedEvent<E>(delay: string, stateId: string): E {
  return { type: `xstate.after.${delay}.${stateId}` } as unknown as E;
}

/** The states the paths end in, each named once (`stateName`), sorted: what a coverage test compares. */
export function reachedStates(paths: readonly { readonly state: { readonly value: unknown } }[]): string[] {
  return [...new Set(paths.map((p) => stateName(p.state.value)))].sort();
}
