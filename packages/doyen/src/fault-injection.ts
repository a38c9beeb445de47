import type { Logger } from '@doyen/core';
import type { WsTransport } from '@doyen/wire';
import { BadRequestBodyError, readJsonBody, sendJson } from './http-json.js';
import type { Route } from './management-route.js';

/** The longest stall `POST /fault/stall` accepts: a minute of a frozen event loop is plenty for any test. */
export const MAX_STALL_MS = 60_000;

const PATHS = new Set(['/fault/blackhole', '/fault/heal', '/fault/stall']);

/**
 * `POST /fault/blackhole {"peers": ["host:port", …]}` and `POST /fault/heal [{"peers": …}]`:
 * drop traffic between this node and those peers, like Akka's test-conductor blackhole.
 * `POST /fault/stall {"ms": N}` (1..60000): answers, then keeps the event loop busy for N ms,
 * as CPU starvation or a long GC would — timers, heartbeats and sockets all wait. Only mounted
 * when the node was started with fault injection enabled (`--enable-fault-injection`).
 */
export function faultInjectionRoute(transport: () => WsTransport, logger?: Logger): Route {
  return async (request, response, url) => {
    if (request.method !== 'POST' || !PATHS.has(url.pathname)) return false;
    let body: { peers?: unknown; ms?: unknown };
    try {
      const parsed = await readJsonBody(request);
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
        throw new BadRequestBodyError('the body must be a JSON object');
      body = parsed as { peers?: unknown; ms?: unknown };
    } catch (error) {
      if (!(error instanceof BadRequestBodyError)) throw error;
      sendJson(response, error.status, { error: error.message });
      return true;
    }
    if (url.pathname === '/fault/stall') {
      const ms = body.ms;
      if (typeof ms !== 'number' || !Number.isInteger(ms) || ms < 1 || ms > MAX_STALL_MS) {
        sendJson(response, 400, {
          error: `ms must be a whole number of milliseconds from 1 to ${MAX_STALL_MS}`,
        });
        return true;
      }
      logger?.warn({ event: 'fault.stall', ms }, `fault injection: stalling the event loop for ${ms} ms`);
      // stall only once the answer is out, so the caller is not left waiting for it
      response.once('finish', () => busyFor(ms));
      sendJson(response, 200, { ok: true, ms });
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

/** A synchronous busy loop: nothing else in this process runs until it ends. */
function busyFor(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // spinning on purpose
  }
}
