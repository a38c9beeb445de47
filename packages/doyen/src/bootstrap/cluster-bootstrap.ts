import { DoyenError, formatNodeAddress, type Logger, type NodeAddress } from '@doyen/core';
import {
  type BootstrapDecision,
  type BootstrapSettings,
  type BootstrapState,
  decide,
  discovered,
  initialBootstrapState,
  observed,
} from './bootstrap-decision.js';
import type { ServiceDiscovery } from './discovery.js';
import { probeContactPoint } from './seed-nodes.js';

export interface ClusterBootstrapOptions {
  readonly discovery: ServiceDiscovery;
  readonly settings: BootstrapSettings;
  readonly clusterName: string;
  /** The scheme the contact points' management ports speak (the same as ours). */
  readonly scheme: 'http' | 'https';
  /** Discovery and probes run again this often. */
  readonly intervalMs: number;
  readonly probeTimeoutMs: number;
  readonly logger: Logger;
  /** Ends the bootstrap early (the node is closing): it rejects with BootstrapAbortedError. */
  readonly signal?: AbortSignal;
  readonly now?: () => number;
}

/** What the bootstrap decided: join these seed nodes, or form a new cluster (`form`, no seeds). */
export type BootstrapOutcome = Exclude<BootstrapDecision, { kind: 'keep-probing' }>;

export class BootstrapAbortedError extends DoyenError {
  constructor() {
    super('the cluster bootstrap was stopped before it decided', 'bootstrap-aborted');
  }
}

/**
 * Discovers and probes until the decision is to join or to form. Each round: look the contact
 * points up, probe every one's seed nodes at once, decide (a pure function of what was seen).
 * Never gives up on its own: a node that finds nobody keeps looking (and is not ready).
 */
export async function runClusterBootstrap(options: ClusterBootstrapOptions): Promise<BootstrapOutcome> {
  const { logger, settings } = options;
  const now = options.now ?? Date.now;
  let state: BootstrapState = initialBootstrapState(now());
  let lastReason = '';
  const failing = new Set<string>();
  logger.info(
    {
      event: 'bootstrap.started',
      method: options.discovery.method,
      requiredContactPoints: settings.requiredContactPoints,
      stableMarginMs: settings.stableMarginMs,
    },
    `cluster bootstrap: discovering contact points (${settings.requiredContactPoints} required, stable for ${settings.stableMarginMs} ms)`,
  );
  for (;;) {
    if (options.signal?.aborted) throw new BootstrapAbortedError();
    let points: readonly NodeAddress[] = [];
    try {
      points = await options.discovery.lookup();
    } catch (error) {
      logger.warn({ event: 'bootstrap.lookup-failed', err: error }, (error as Error).message);
    }
    const before = state.contactPoints;
    state = discovered(state, points, now());
    if (state.contactPoints !== before) {
      logger.info(
        { event: 'bootstrap.contact-points', contactPoints: state.contactPoints.map(formatNodeAddress) },
        `contact points: ${state.contactPoints.map(formatNodeAddress).join(', ') || 'none'}`,
      );
    }
    const answers = await Promise.all(
      state.contactPoints.map(async (point) => {
        try {
          const seeds = await probeContactPoint(point, {
            clusterName: options.clusterName,
            scheme: options.scheme,
            timeoutMs: options.probeTimeoutMs,
          });
          failing.delete(formatNodeAddress(point));
          return { point, seeds };
        } catch (error) {
          // said once per contact point until it answers again
          const key = formatNodeAddress(point);
          if (!failing.has(key)) {
            failing.add(key);
            logger.debug(
              { event: 'bootstrap.probe-failed', contactPoint: key, error: (error as Error).message },
              `no seed nodes from ${key}: ${(error as Error).message}`,
            );
          }
          return undefined;
        }
      }),
    );
    const at = now();
    for (const answer of answers) if (answer) state = observed(state, answer.point, answer.seeds, at);
    const decision = decide(state, settings, at);
    if (decision.kind !== 'keep-probing') {
      if (decision.kind === 'join') {
        const seeds = decision.seedNodes.map(formatNodeAddress);
        logger.info(
          { event: 'bootstrap.join', seedNodes: seeds },
          `joining the cluster through ${seeds.join(', ')}`,
        );
      } else {
        logger.info(
          { event: 'bootstrap.form', contactPoints: state.contactPoints.map(formatNodeAddress) },
          'no cluster among the contact points and this node has the lowest address: forming a new cluster',
        );
      }
      return decision;
    }
    // the reason without its figures: said again only when it changes in kind
    const kind = decision.reason.replace(/\d+/g, 'N');
    if (kind !== lastReason) {
      lastReason = kind;
      logger.info({ event: 'bootstrap.waiting', reason: decision.reason }, `bootstrap: ${decision.reason}`);
    }
    await sleep(options.intervalMs, options.signal);
  }
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
