import { spawn } from 'node:child_process';
import { platform } from 'node:os';
import { parseArgs } from 'node:util';
import type { Logger } from '@doyen/core';
import { normalizeOrigin } from '../node-config.js';
import { InspectorRelay, VIEWER_PATH } from './relay-server.js';

export const INSPECTOR_USAGE = `usage: doyen inspector [--port 8080] [--host 127.0.0.1] [--allowed-origins https://a,https://b] [--open]

Relays the machines of nodes started with --inspect to Stately's inspector: nodes send to
ws://HOST:PORT, and http://HOST:PORT shows them (the page embeds https://stately.ai/inspect:
it needs internet access). Binds 127.0.0.1 unless --host says otherwise. Only node
connections are relayed (to the viewers, never to other nodes); a browser page may only watch,
from this server's own origin or an --allowed-origins one. --open opens a browser.`;

/** A running inspector server: nodes send to `url`, people open `pageUrl`. */
export interface InspectorServer {
  readonly url: string;
  readonly pageUrl: string;
  readonly relay: InspectorRelay;
  stop(): void;
}

function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

/**
 * Starts the inspector relay on `host` (default 127.0.0.1) and `port` (default 8080); rejects
 * when the port is taken.
 */
export async function startInspectorServer(
  options: {
    port?: number;
    host?: string;
    open?: boolean;
    allowedOrigins?: readonly string[];
    logger?: Logger;
    /** See RelayServerOptions. */
    maxViewerBufferBytes?: number;
    maxViewers?: number;
  } = {},
): Promise<InspectorServer> {
  const relay = await InspectorRelay.start({
    port: options.port ?? 8080,
    ...(options.maxViewerBufferBytes !== undefined
      ? { maxViewerBufferBytes: options.maxViewerBufferBytes }
      : {}),
    ...(options.maxViewers !== undefined ? { maxViewers: options.maxViewers } : {}),
    ...(options.host ? { host: options.host } : {}),
    ...(options.allowedOrigins ? { allowedOrigins: options.allowedOrigins } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
  });
  const base = `${urlHost(relay.host)}:${relay.port}`;
  const pageUrl = `http://${base}`;
  if (options.open) openBrowser(pageUrl);
  return { url: `ws://${base}`, pageUrl, relay, stop: () => void relay.stop() };
}

/** Never through a shell: the URL is built from a flag. */
function openBrowser(url: string): void {
  const os = platform();
  const [command, args] =
    os === 'darwin'
      ? ['open', [url]]
      : os === 'win32'
        ? ['cmd', ['/c', 'start', '', url]]
        : ['xdg-open', [url]];
  const child = spawn(command as string, args as string[], { stdio: 'ignore', detached: true });
  child.on('error', () => {});
  child.unref();
}

/** `doyen inspector`: runs the server until SIGINT/SIGTERM; `{ error }` on a usage error. */
export async function runInspectorServerCommand(
  args: readonly string[],
  write: (line: string) => void = (line) => process.stdout.write(`${line}\n`),
  logger?: Logger,
): Promise<InspectorServer | { error: string }> {
  let values: { port?: string; host?: string; 'allowed-origins'?: string; open?: boolean };
  try {
    ({ values } = parseArgs({
      args: [...args],
      options: {
        port: { type: 'string' },
        host: { type: 'string' },
        'allowed-origins': { type: 'string' },
        open: { type: 'boolean' },
      },
      strict: true,
    }));
  } catch (error) {
    return { error: `${(error as Error).message}\n${INSPECTOR_USAGE}` };
  }
  const port = Number(values.port ?? 8080);
  if (!Number.isInteger(port) || port <= 0 || port > 65535) return { error: `bad --port ${values.port}` };
  let server: InspectorServer;
  try {
    const allowedOrigins = (values['allowed-origins'] ?? '')
      .split(',')
      .map((o) => o.trim())
      .filter(Boolean)
      .map(normalizeOrigin);
    server = await startInspectorServer({
      port,
      ...(values.host ? { host: values.host } : {}),
      open: values.open === true,
      allowedOrigins,
      ...(logger ? { logger } : {}),
    });
  } catch (error) {
    return { error: (error as Error).message };
  }
  const address = server.relay.address;
  write(
    `Stately inspector server on ${address.address}:${address.port}: nodes send to ${server.url} (start them with --inspect-url ${server.url}); viewers connect to ${VIEWER_PATH}`,
  );
  write(`open ${server.pageUrl} in a browser (it loads https://stately.ai/inspect: online only)`);
  return server;
}
