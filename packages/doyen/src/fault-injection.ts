import type { WsTransport } from '@doyen/wire';
import { BadRequestBodyError, readJsonBody, sendJson } from './http-json.js';
import type { Route } from './management-route.js';

/**
 * `POST /fault/blackhole {"peers": ["host:port", …]}` and `POST /fault/heal [{"peers": …}]`:
 * drop traffic between this node and those peers, like Akka's test-conductor blackhole. Only
 * mounted when the node was started with fault injection enabled (`--enable-fault-injection`).
 */
export function faultInjectionRoute(transport: () => WsTransport): Route {
  return async (request, response, url) => {
    if (
      request.method !== 'POST' ||
      (url.pathname !== '/fault/blackhole' && url.pathname !== '/fault/heal')
    ) {
      return false;
    }
    let body: { peers?: unknown };
    try {
      const parsed = await readJsonBody(request);
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
        throw new BadRequestBodyError('the body must be a JSON object');
      body = parsed as { peers?: unknown };
    } catch (error) {
      if (!(error instanceof BadRequestBodyError)) throw error;
      sendJson(response, error.status, { error: error.message });
      return true;
    }
    const peers = body.peers;
    if (peers !== undefined && !(Array.isArray(peers) && peers.every((p) => typeof p === 'string'))) {
      sendJson(response, 400, { error: 'peers must be a list of host:port strings' });
      return true;
    }
    if (url.pathname === '/fault/blackhole') {
      if (!peers) {
        sendJson(response, 400, { error: 'peers required' });
        return true;
      }
      transport().blackhole(peers as string[]);
    } else {
      transport().heal(peers as string[] | undefined);
    }
    sendJson(response, 200, { ok: true });
    return true;
  };
}
