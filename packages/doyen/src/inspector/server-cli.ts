import { createServer } from 'node:net';
import { parseArgs } from 'node:util';
import { createInspectorServer } from '@statelyai/inspect/server';

export const INSPECTOR_USAGE = `usage: doyen inspector [--port 8080] [--open]

Runs @statelyai/inspect's inspector server: nodes started with --inspect send their machines'
events to ws://localhost:PORT, and http://localhost:PORT shows them in Stately's inspector
(the page embeds https://stately.ai/inspect: it needs internet access). --open opens a browser.`;

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, () => probe.close(() => resolve(true)));
  });
}

/** A running inspector server: nodes send to `url`, people open `pageUrl`. */
export interface InspectorServer {
  readonly url: string;
  readonly pageUrl: string;
  stop(): void;
}

/**
 * Starts `@statelyai/inspect`'s inspector server on `port` (default 8080): it relays what
 * nodes started with `inspect` send to the Stately inspector page it serves. Rejects when the
 * port is taken (the package itself would crash the process on that).
 */
export async function startInspectorServer(
  options: { port?: number; open?: boolean } = {},
): Promise<InspectorServer> {
  const port = options.port ?? 8080;
  if (!(await portFree(port))) throw new Error(`port ${port} is in use (another inspector server?)`);
  const server = createInspectorServer({ port, autoOpen: options.open === true });
  return { url: `ws://localhost:${port}`, pageUrl: `http://localhost:${port}`, stop: () => server.stop() };
}

/** `doyen inspector`: runs the server until SIGINT/SIGTERM; `{ error }` on a usage error. */
export async function runInspectorServerCommand(
  args: readonly string[],
  write: (line: string) => void = (line) => process.stdout.write(`${line}\n`),
): Promise<InspectorServer | { error: string }> {
  let values: { port?: string; open?: boolean };
  try {
    ({ values } = parseArgs({
      args: [...args],
      options: { port: { type: 'string' }, open: { type: 'boolean' } },
      strict: true,
    }));
  } catch (error) {
    return { error: `${(error as Error).message}\n${INSPECTOR_USAGE}` };
  }
  const port = Number(values.port ?? 8080);
  if (!Number.isInteger(port) || port <= 0 || port > 65535) return { error: `bad --port ${values.port}` };
  let server: InspectorServer;
  try {
    server = await startInspectorServer({ port, open: values.open === true });
  } catch (error) {
    return { error: (error as Error).message };
  }
  write(`Stately inspector server: nodes send to ${server.url} (start them with --inspect)`);
  write(`open ${server.pageUrl} in a browser (it loads https://stately.ai/inspect: online only)`);
  return server;
}
