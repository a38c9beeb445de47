// The emergent singleton's host lease is configured like every other setting: flags, DOYEN_*
// variables and the config file, checked once; settings the lease cannot work with are refused.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigProblemsError, loadNodeConfig } from '../../packages/doyen/src/index.js';
import { checkHostLeaseSettings, DEFAULT_HOST_LEASE } from '../../packages/singleton/src/index.js';

const env = {
  DOYEN_CLUSTER: 'c',
  DOYEN_HOST: '127.0.0.1',
  DOYEN_PORT: '0',
  DOYEN_INSECURE: '1',
  DOYEN_SEEDS: '127.0.0.1:1',
};

describe('host lease configuration', () => {
  it('takes --host-lease-ms and --pause-bound-ms, their variables and the file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'doyen-host-lease-'));
    const file = join(dir, 'c.json');
    writeFileSync(file, JSON.stringify({ hostLease: { maxClockDrift: 0.02, pauseBoundMs: 700 } }));
    const config = loadNodeConfig({ argv: ['--host-lease-ms', '1500'], env, file });
    expect(config.hostLease).toEqual({ maxClockDrift: 0.02, pauseBoundMs: 700, leaseMs: 1500 });
    const fromEnv = loadNodeConfig({ env: { ...env, DOYEN_PAUSE_BOUND_MS: '300' } });
    expect(fromEnv.hostLease).toEqual({ pauseBoundMs: 300 });
    expect(loadNodeConfig({ env }).hostLease).toBeUndefined();
  });

  it('refuses a lease too short to renew, a negative pause bound and a drift of half a clock', () => {
    expect(() => loadNodeConfig({ argv: ['--host-lease-ms', '50'], env })).toThrow(
      /hostLease\.leaseMs must be a number of ms ≥ 100/,
    );
    expect(() => loadNodeConfig({ argv: ['--pause-bound-ms', '-1'], env })).toThrow(ConfigProblemsError);
    expect(() => loadNodeConfig({ argv: ['--pause-bound-ms', '-1'], env })).toThrow(
      /pause-bound-ms|pauseBoundMs/,
    );
    expect(() => checkHostLeaseSettings({ maxClockDrift: 0.5 })).toThrow(/maxClockDrift/);
    expect(() => checkHostLeaseSettings({ leaseMs: Number.NaN })).toThrow(/leaseMs/);
    // positive control: the defaults and a sane override pass
    expect(checkHostLeaseSettings({})).toEqual(DEFAULT_HOST_LEASE);
    expect(checkHostLeaseSettings({ leaseMs: 2000 }).leaseMs).toBe(2000);
  });
});
