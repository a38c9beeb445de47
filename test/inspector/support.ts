import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import {
  DOWNING_PATH,
  HEARTBEAT_PATH,
  MEMBERSHIP_PATH,
  SPLIT_BRAIN_CHECKER_PATH,
} from '../../packages/cluster/src/index.js';
import { silentLogger } from '../../packages/core/src/index.js';
import { type DoyenNode, type NodeConfig, startNode } from '../../packages/doyen/src/index.js';
import { eventually } from '../support/wait.js';

export const CLUSTER = 'inspector-test';

/** The cluster's system machines every inspected node shows (an election's only with one configured). */
export const SYSTEM_MACHINES = [MEMBERSHIP_PATH, HEARTBEAT_PATH, DOWNING_PATH, SPLIT_BRAIN_CHECKER_PATH];
const SECRET = randomBytes(16).toString('hex');

/** A node on 127.0.0.1 with HTTP on; `seed` is the port of the first seed (its own to form). */
export async function startInspectedNode(
  port: number,
  httpPort: number,
  seed: number,
  extra: Partial<NodeConfig> = {},
  options: { waitUntilUp?: boolean } = {},
): Promise<DoyenNode> {
  return startNode(
    {
      cluster: CLUSTER,
      host: '127.0.0.1',
      port,
      httpPort,
      seeds: [{ host: '127.0.0.1', port: seed }],
      secret: SECRET,
      clusterOptions: { downing: 'manual', maxJoinAttempts: 1000, joinBackoffMaxMs: 300 },
      ...extra,
    },
    { logger: silentLogger(), ...options },
  );
}

export async function getJson(httpPort: number, path: string): Promise<{ status: number; body: any }> {
  const r = await fetch(`http://127.0.0.1:${httpPort}${path}`);
  return { status: r.status, body: await r.json() };
}

/** A WebSocket client that records every JSON message it receives. */
export interface Recorder {
  readonly ws: WebSocket;
  readonly messages: any[];
  /** Resolves with the first recorded message (from `from` on) that satisfies `match`. */
  waitFor(match: (m: any) => boolean, what: string, from?: number, timeoutMs?: number): Promise<any>;
  close(): Promise<void>;
}

export async function record(url: string, headers: Record<string, string> = {}): Promise<Recorder> {
  const ws = new WebSocket(url, { headers });
  const messages: any[] = [];
  ws.on('message', (data) => {
    try {
      messages.push(JSON.parse(String(data)));
    } catch {
      messages.push(String(data));
    }
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return {
    ws,
    messages,
    waitFor: (match, what, from = 0, timeoutMs = 15_000) =>
      eventually(() => messages.slice(from).find(match), { timeoutMs, what }),
    close: () =>
      new Promise<void>((resolve) => {
        if (ws.readyState === WebSocket.CLOSED) return resolve();
        ws.once('close', () => resolve());
        ws.terminate();
      }),
  };
}

/** The status of an upgrade attempt that is refused (404, 403). */
export function upgradeStatus(url: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.on('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      ws.terminate();
    });
    ws.on('open', () => {
      ws.terminate();
      resolve(101);
    });
    ws.on('error', (e) => reject(e));
  });
}
