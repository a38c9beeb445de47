import type { DoyenNode } from '../../packages/doyen/src/index.js';

/**
 * Counts the `console.subscribe` messages `node` sends, per target address (`host:port`), by
 * wrapping its system's `remoteRef`: what the console tests read to see whom the serving node asks.
 */
export function countSubscribes(node: DoyenNode): Map<string, number> {
  const counts = new Map<string, number>();
  const system = node.system;
  const remoteRef = system.remoteRef.bind(system);
  system.remoteRef = ((to: Parameters<typeof remoteRef>[0], path: string) => {
    const ref = remoteRef(to, path);
    const send = ref.send.bind(ref);
    return Object.assign(Object.create(ref), {
      send: (message: { type?: string }, ...rest: unknown[]) => {
        if (message?.type === 'console.subscribe') {
          const address = `${to.host}:${to.port}`;
          counts.set(address, (counts.get(address) ?? 0) + 1);
        }
        return (send as (...a: unknown[]) => unknown)(message, ...rest);
      },
    });
  }) as typeof system.remoteRef;
  return counts;
}

/** All `console.subscribe` messages counted in `counts`. */
export function totalSubscribes(counts: ReadonlyMap<string, number>): number {
  let total = 0;
  for (const n of counts.values()) total += n;
  return total;
}
