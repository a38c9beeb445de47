import type { ShardRegionsView } from '@doyen/sharding';
import { sendJson as json } from './http-json.js';
import type { ManagedNode, Route } from './management-route.js';

/**
 * `GET /cluster/shards`: this node's sharding view (per entity type, the partitions active here
 * and their entity counts, plus the table version and held messages). `GET /cluster/shards/{type}`:
 * one type in Akka Management's shape, `{ regions: [{ shards: [{ shardId, numEntities }] }] }`.
 */
export function shardsRoute(node: ManagedNode): Route {
  return (request, response, url) => {
    const path = url.pathname.replace(/\/+$/, '') || '/';
    if (path !== '/cluster/shards' && !path.startsWith('/cluster/shards/')) return false;
    if ((request.method ?? 'GET') !== 'GET') {
      json(response, 405, { error: `${request.method} not allowed on ${path}` });
      return true;
    }
    const sharding = node.sharding;
    if (!sharding) {
      json(response, 404, { error: 'sharding is off on this node (partitions: { count: 0 })' });
      return true;
    }
    const view: ShardRegionsView = sharding.shards();
    if (path === '/cluster/shards') {
      json(response, 200, view);
      return true;
    }
    const name = decodeURIComponent(path.slice('/cluster/shards/'.length));
    const region = view.regions.find((r) => r.typeName === name);
    if (!region) {
      json(response, 404, { error: `no entity type ${JSON.stringify(name.slice(0, 100))} on this node` });
      return true;
    }
    json(response, 200, { regions: [{ shards: region.shards }] });
    return true;
  };
}
