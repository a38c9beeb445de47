// Keeper messages the decision tests feed in by hand.

/** A member's answer to the query (version, round) for partition 0: it never saw the token. */
export const emptyAnswer = (from: string, version = 2, round = 1) =>
  ({
    type: 'sharding.token-answer',
    from,
    version,
    round,
    newer: null,
    answers: [{ partition: 0, seen: null, handed: null, dormant: null }],
  }) as const;
