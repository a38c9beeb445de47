// A real etcd for one suite: ETCD_ENDPOINTS when set, else a throwaway `etcd` this suite starts on
// free ports (killed after the suite), else nothing: the suite skips, naming the missing package.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts } from './cluster-nodes.js';
import { etcdEndpoints } from './etcd.js';
import { eventually } from './wait.js';

/** Whether an etcd server binary is on PATH (Debian's etcd-server package installs `etcd`). */
export function etcdInstalled(): boolean {
  try {
    execFileSync('etcd', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export const ETCD_MISSING =
  'etcd-server is not installed (no `etcd` on PATH) and ETCD_ENDPOINTS is not set: apt-get install etcd-server';

export interface ThrowawayEtcd {
  readonly endpoints: string[];
  stop(): void;
}

/** ETCD_ENDPOINTS, or a fresh etcd on free 127.0.0.1 ports answering /health. */
export async function startThrowawayEtcd(): Promise<ThrowawayEtcd> {
  const given = etcdEndpoints();
  if (given) return { endpoints: given, stop: () => {} };
  const [client, peer] = await freePorts(2);
  const dir = mkdtempSync(join(tmpdir(), 'doyen-etcd-'));
  const url = `http://127.0.0.1:${client}`;
  const child: ChildProcess = spawn(
    'etcd',
    [
      '--data-dir',
      dir,
      '--listen-client-urls',
      url,
      '--advertise-client-urls',
      url,
      '--listen-peer-urls',
      `http://127.0.0.1:${peer}`,
      '--initial-advertise-peer-urls',
      `http://127.0.0.1:${peer}`,
      '--initial-cluster',
      `default=http://127.0.0.1:${peer}`,
    ],
    { stdio: 'ignore' },
  );
  const stop = () => {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await eventually(
      async () => {
        const res = await fetch(`${url}/health`).catch(() => undefined);
        return res?.ok ? true : undefined;
      },
      { what: `etcd answering on ${url}`, timeoutMs: 15_000, intervalMs: 100 },
    );
  } catch (error) {
    stop();
    throw error;
  }
  return { endpoints: [url], stop };
}
