import { InvalidConfigError } from '@doyen/core';

/** The host lease's timing (see host-lease-decisions.ts for what each assumption guarantees). */
export interface HostLeaseSettings {
  /** How long a majority's grant keeps a host running (default 1000 ms). */
  readonly leaseMs?: number;
  /** The longest a process may stall (GC, SIGSTOP, a busy loop) with the guarantee kept (default 500 ms). */
  readonly pauseBoundMs?: number;
  /** How much faster or slower one clock may run than another over a lease (default 0.01). */
  readonly maxClockDrift?: number;
}

export const DEFAULT_HOST_LEASE: Required<HostLeaseSettings> = {
  leaseMs: 1000,
  pauseBoundMs: 500,
  maxClockDrift: 0.01,
};

/** Refuses settings under which the lease cannot work (a renewal must fit several times in a lease). */
export function checkHostLeaseSettings(settings: HostLeaseSettings): Required<HostLeaseSettings> {
  const s = { ...DEFAULT_HOST_LEASE, ...settings };
  if (!(Number.isFinite(s.leaseMs) && s.leaseMs >= 100))
    throw new InvalidConfigError('hostLease.leaseMs must be a number of ms ≥ 100');
  if (!(Number.isFinite(s.pauseBoundMs) && s.pauseBoundMs >= 0))
    throw new InvalidConfigError('hostLease.pauseBoundMs must be a number of ms ≥ 0');
  if (!(Number.isFinite(s.maxClockDrift) && s.maxClockDrift >= 0 && s.maxClockDrift < 0.5))
    throw new InvalidConfigError('hostLease.maxClockDrift must be a fraction in [0, 0.5)');
  return s;
}
