import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson } from '../http-json.js';
import { crossSiteRefusalOf } from '../management-guard.js';
import type { ManagementServer } from '../management-http.js';
import { CONSOLE_CSP, consoleAssets } from './console-assets.js';
import type { ConsoleService } from './console-service.js';

export const CONSOLE_PATHS = {
  page: '/console',
  assets: '/console/assets/',
  state: '/console/state',
  stream: '/console/stream',
  history: '/console/history',
} as const;

/**
 * Answers `GET /console` and `/console/assets/<name>` from the page's files; true when `path`
 * was one of them (the standalone console serves them the same way).
 */
export function serveConsolePage(path: string, request: IncomingMessage, response: ServerResponse): boolean {
  const name =
    path === CONSOLE_PATHS.page
      ? 'index.html'
      : path.startsWith(CONSOLE_PATHS.assets)
        ? path.slice(CONSOLE_PATHS.assets.length)
        : undefined;
  if (name === undefined) return false;
  const asset = consoleAssets().get(name);
  if (!asset) {
    sendJson(response, 404, { error: `no console asset ${JSON.stringify(name.slice(0, 100))}` });
    return true;
  }
  response.writeHead(200, {
    'content-type': asset.type,
    'content-length': String(asset.body.length),
    'cache-control': 'no-cache',
    'content-security-policy': CONSOLE_CSP,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  });
  response.end(request.method === 'HEAD' ? undefined : asset.body);
  return true;
}

/**
 * Serves the cluster console from the management endpoint (behind its Host check): the page,
 * `GET /console/state`, the event stream `GET /console/stream` and `GET /console/history`
 * (`?download=1`: the export). Cross-site requests are refused on every console path: the
 * stream is held open, and the state is the whole cluster's.
 */
export function attachConsole(http: ManagementServer, service: ConsoleService): void {
  http.addRoute((request, response, url) => {
    const path = url.pathname.replace(/\/+$/, '') || '/';
    if (path !== CONSOLE_PATHS.page && !path.startsWith(`${CONSOLE_PATHS.page}/`)) return false;
    const method = request.method ?? 'GET';
    if (method !== 'GET' && method !== 'HEAD') {
      sendJson(response, 405, { error: `${method} not allowed on ${path}` });
      return true;
    }
    const refusal = crossSiteRefusalOf(request.headers, http.policy);
    if (refusal) {
      http.refused(request, refusal.reason);
      sendJson(response, refusal.status, { error: refusal.error });
      return true;
    }
    // opening the page starts the gathering with this node's own view; the members are asked
    // once the page has its state (ConsoleService.touchPage): their views come on the stream
    if (path === CONSOLE_PATHS.page || path.startsWith(CONSOLE_PATHS.assets)) service.touchPage();
    else if (path !== CONSOLE_PATHS.state) service.touch();
    if (serveConsolePage(path, request, response)) return true;
    if (path === CONSOLE_PATHS.state) {
      sendJson(response, 200, service.gatherer.state(service.selfKey));
      // the members are asked once the state is on its way
      service.touch();
      return true;
    }
    if (path === CONSOLE_PATHS.history) {
      const history = service.gatherer.history.export();
      const headers: Record<string, string> =
        url.searchParams.get('download') === '1'
          ? {
              'content-disposition': `attachment; filename="doyen-console-${new Date(history.to).toISOString().replace(/[:.]/g, '-')}.json"`,
            }
          : {};
      response.writeHead(200, {
        'content-type': 'application/json; charset=utf-8',
        'cache-control': 'no-store',
        ...headers,
      });
      response.end(JSON.stringify(history));
      return true;
    }
    if (path === CONSOLE_PATHS.stream) {
      service.viewers.add(request.socket.remoteAddress ?? 'unknown', response, service.gatherer.views());
      return true;
    }
    sendJson(response, 404, { error: `no route ${path}` });
    return true;
  });
}
