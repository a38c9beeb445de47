/** Anything whose `watch` reports the key's holder and the revision it was seen at. */
export interface HolderWatchable {
  watch(onChange: (holder: string | undefined, revision: number) => void): unknown;
}

/** Records every (holder, revision) `source`'s watch reports; `last()` is the latest. */
export function holderRecorder(source: HolderWatchable) {
  const seen: { holder: string | undefined; revision: number }[] = [];
  source.watch((holder, revision) => seen.push({ holder, revision }));
  return { seen, last: () => seen.at(-1) };
}
