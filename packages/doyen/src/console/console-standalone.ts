import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { sendJson } from '../http-json.js';
import {
  crossSiteRefusalOf,
  hostRefusalOf,
  isLoopback,
  managementPolicy,
  ownOrigins,
} from '../management-guard.js';
import { CONSOLE_PATHS, serveConsolePage } from './console-routes.js';

export const CONSOLE_USAGE = `usage: doyen console --node http://HOST:PORT [--port 8090] [--host 127.0.0.1]

Serves the cluster console on http://HOST:PORT/console (default 127.0.0.1:8090) and relays its
data (/console/state, /console/stream, /console/history) and the leave/down actions to one
node's management endpoint (--node, e.g. a kubectl port-forward to one pod): that node gathers
the whole cluster over the cluster's own wire. The page's files are served from here.`;

/** What is relayed to the node: the console's data and the guarded actions the page calls. */
function relayed(method: string, path: string): boolean {
  if (method === 'GET')
    return path === CONSOLE_PATHS.state || path === CONSOLE_PATHS.stream || path === CONSOLE_PATHS.history;
  if (method === 'POST') return path === '/cluster/leave' || /^\/cluster\/down\/[^/]+$/.test(path);
  return method === 'PUT' && /^\/cluster\/members\/[^/]+$/.test(path);
}

/** Request headers passed on: the token and the body's type; never cookies, never the Origin. */
const FORWARDED = ['authorization', 'content-type', 'content-length', 'accept'];

export interface StandaloneConsole {
  readonly server: Server;
  readonly url: string;
  stop(): Promise<void>;
}

/** Starts the standalone console for `node` (`http(s)://host:port` of a management endpoint). */
export async function startStandaloneConsole(options: {
  node: string;
  port?: number;
  host?: string;
}): Promise<StandaloneConsole> {
  const target = new URL(options.node);
  if (target.protocol !== 'http:' && target.protocol !== 'https:')
    throw new Error(
      `--node must be an http:// or https:// URL, got ${JSON.stringify(options.node.slice(0, 100))}`,
    );
  const host = options.host ?? '127.0.0.1';
  let policy = managementPolicy(undefined, [], false);
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const path = url.pathname.replace(/\/+$/, '') || '/';
    const method = request.method ?? 'GET';
    const refusal = hostRefusalOf(request.headers, policy) ?? crossSiteRefusalOf(request.headers, policy);
    if (refusal) return sendJson(response, refusal.status, { error: refusal.error });
    if (path === '/') {
      response.writeHead(302, { location: CONSOLE_PATHS.page });
      return response.end();
    }
    if ((method === 'GET' || method === 'HEAD') && serveConsolePage(path, request, response)) return;
    if (!relayed(method, path)) return sendJson(response, 404, { error: `no route ${path}` });
    relay(target, request, response, `${path}${url.search}`);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 8090, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  policy = managementPolicy(undefined, ownOrigins('http', host, port), isLoopback(host));
  const shown = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  return {
    server,
    url: `http://${shown}:${port}${CONSOLE_PATHS.page}`,
    stop: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function relay(target: URL, request: IncomingMessage, response: ServerResponse, path: string): void {
  const headers: Record<string, string> = {};
  for (const name of FORWARDED) {
    const value = request.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  const upstream = send(
    {
      protocol: target.protocol,
      hostname: target.hostname,
      port: target.port,
      method: request.method,
      path,
      headers,
    },
    (answer) => {
      const pass: Record<string, string> = {};
      for (const name of ['content-type', 'content-disposition', 'cache-control', 'www-authenticate']) {
        const value = answer.headers[name];
        if (typeof value === 'string') pass[name] = value;
      }
      response.writeHead(answer.statusCode ?? 502, pass);
      answer.pipe(response);
      // a viewer that goes closes its stream at the node too
      response.once('close', () => answer.destroy());
    },
  );
  upstream.on('error', (error) => {
    if (!response.headersSent)
      sendJson(response, 502, { error: `the node did not answer: ${error.message}` });
    else response.destroy();
  });
  request.pipe(upstream);
}

/** `doyen console`: runs until SIGINT/SIGTERM; `{ error }` on a usage error. */
export async function runConsoleCommand(
  args: readonly string[],
  write: (line: string) => void = (line) => process.stdout.write(`${line}\n`),
): Promise<StandaloneConsole | { error: string }> {
  let values: { node?: string; port?: string; host?: string };
  try {
    ({ values } = parseArgs({
      args: [...args],
      options: { node: { type: 'string' }, port: { type: 'string' }, host: { type: 'string' } },
      strict: true,
    }));
  } catch (error) {
    return { error: `${(error as Error).message}\n${CONSOLE_USAGE}` };
  }
  if (!values.node) return { error: `--node is required\n${CONSOLE_USAGE}` };
  const port = Number(values.port ?? 8090);
  if (!Number.isInteger(port) || port < 0 || port > 65535) return { error: `bad --port ${values.port}` };
  try {
    const standalone = await startStandaloneConsole({
      node: values.node,
      port,
      ...(values.host ? { host: values.host } : {}),
    });
    write(`cluster console of ${values.node}: open ${standalone.url}`);
    return standalone;
  } catch (error) {
    return { error: (error as Error).message };
  }
}
