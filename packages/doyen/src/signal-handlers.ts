import type { Logger } from '@doyen/core';
import { exitAfterLogs } from './log-drain.js';

/** What handling a signal needs from the node. */
export interface ShutdownTarget {
  shutdown(reason?: string): Promise<void>;
  readonly closed: Promise<unknown>;
}

export interface SignalSource {
  once(signal: NodeJS.Signals, listener: () => void): unknown;
  removeListener(signal: NodeJS.Signals, listener: () => void): unknown;
}

const SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT'];

/**
 * What `doyen node` does on SIGTERM and SIGINT, for an app that asks `startNode` for it
 * (`handleSignals: true`): the coordinated shutdown (a graceful leave, singletons handed over),
 * then exit 0 once the log lines are written. The handlers go away when the node stops for another reason.
 */
export function handleShutdownSignals(
  node: ShutdownTarget,
  logger: Logger,
  source: SignalSource = process,
  // the lines of the shutdown written before the exit (pino's exit hook alone loses a chunk on a full pipe)
  exit: (code: number) => void = (code) => void exitAfterLogs(logger, code),
): () => void {
  const handlers = SIGNALS.map((signal) => {
    const handler = () => {
      logger.info({ event: 'node.signal', signal }, `${signal}: leaving gracefully`);
      void node.shutdown(signal).then(
        () => exit(0),
        (error: unknown) => {
          logger.error({ event: 'node.shutdown-failed', err: error }, 'the shutdown failed');
          exit(1);
        },
      );
    };
    source.once(signal, handler);
    return [signal, handler] as const;
  });
  const remove = () => {
    for (const [signal, handler] of handlers) source.removeListener(signal, handler);
  };
  void node.closed.then(remove);
  return remove;
}
