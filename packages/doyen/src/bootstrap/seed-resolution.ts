import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { formatNodeAddress, type Logger, type NodeAddress, sameNode } from '@doyen/core';

/**
 * Says at once when a seed's host name does not resolve (a typo, a Service not created yet),
 * with the seed and the resolver's error, instead of leaving the node silent through all its
 * join attempts. Only a warning: a name may start resolving later (a pod's DNS record appears
 * once it is scheduled), and the join keeps trying it.
 */
export async function warnUnresolvableSeeds(
  seeds: readonly NodeAddress[],
  self: NodeAddress,
  logger: Logger,
  resolve: (host: string) => Promise<unknown> = (host) => lookup(host),
): Promise<void> {
  const named = seeds.filter((s) => isIP(s.host) === 0 && !sameNode(s, self));
  await Promise.all(
    named.map(async (seed) => {
      try {
        await resolve(seed.host);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
        const at = formatNodeAddress(seed);
        logger.warn(
          { event: 'cluster.seed-unresolvable', seed: at, error: code },
          `seed ${at}: its host ${seed.host} does not resolve (${code}); the join keeps trying`,
        );
      }
    }),
  );
}
