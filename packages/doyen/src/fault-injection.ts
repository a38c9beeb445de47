import type { IncomingMessage, ServerResponse } from 'node:http';
import type { WsTransport } from '@doyen/wire';
import type { Route } from './management-http.js';

async function readJson(request: IncomingMessage): Promise<unknown> {
  let body = '';
  for await (const chunk of request) {
    body += chunk;
    if (body.length > 64 * 1024) throw new Error('body too large');
  }
  return body ? JSON.parse(body) : {};
}

function reply(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(`${JSON.stringify(body)}\n`);
}

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
      body = (await readJson(request)) as { peers?: unknown };
    } catch (error) {
      reply(response, 400, { error: `bad JSON: ${(error as Error).message}` });
      return true;
    }
    const peers = body.peers;
    if (peers !== undefined && !(Array.isArray(peers) && peers.every((p) => typeof p === 'string'))) {
      reply(response, 400, { error: 'peers must be a list of host:port strings' });
      return true;
    }
    if (url.pathname === '/fault/blackhole') {
      if (!peers) {
        reply(response, 400, { error: 'peers required' });
        return true;
      }
      transport().blackhole(peers as string[]);
    } else {
      transport().heal(peers as string[] | undefined);
    }
    reply(response, 200, { ok: true });
    return true;
  };
}
