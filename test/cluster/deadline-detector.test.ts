import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_DEADLINE_CONFIG,
  type DeadlineConfig,
  DeadlineFailureDetector,
} from '../../packages/cluster/src/failure-detector/deadline.js';
import {
  createFailureDetector,
  type FailureDetector,
  type FailureDetectorConfig,
} from '../../packages/cluster/src/failure-detector/detector.js';
import { FailureDetectorConfigError } from '../../packages/cluster/src/failure-detector/errors.js';
import { PhiAccrualFailureDetector } from '../../packages/cluster/src/failure-detector/phi-accrual.js';
import { FailureDetectorRegistry } from '../../packages/cluster/src/failure-detector/registry.js';

describe('DeadlineFailureDetector', () => {
  it('defaults to a 1 s deadline (200 ms interval + 800 ms pause)', () => {
    const detector = new DeadlineFailureDetector();
    expect(detector.config).toEqual({ heartbeatIntervalMs: 200, acceptableHeartbeatPauseMs: 800 });
    expect(DEFAULT_DEADLINE_CONFIG).toEqual(detector.config);
    expect(detector.deadlineMs).toBe(1000);
  });

  it('is available and not monitoring before the first heartbeat', () => {
    const detector = new DeadlineFailureDetector();
    expect(detector.isMonitoring).toBe(false);
    expect(detector.isAvailable(1e12)).toBe(true);
  });

  it.each([
    { pause: 900, interval: 100, at: 1000, available: true },
    { pause: 900, interval: 100, at: 1999, available: true },
    { pause: 900, interval: 100, at: 1999.999, available: true },
    { pause: 900, interval: 100, at: 2000, available: false }, // deadline reached: suspected (Akka)
    { pause: 900, interval: 100, at: 2001, available: false },
    { pause: 0, interval: 50, at: 1049, available: true },
    { pause: 0, interval: 50, at: 1050, available: false },
    { pause: 300, interval: 100, at: 1399, available: true },
    { pause: 300, interval: 100, at: 1400, available: false },
  ])('heartbeat at 1000, pause $pause + interval $interval: available at $at = $available', (row) => {
    const detector = new DeadlineFailureDetector({
      acceptableHeartbeatPauseMs: row.pause,
      heartbeatIntervalMs: row.interval,
    });
    detector.heartbeat(1000);
    expect(detector.isAvailable(row.at)).toBe(row.available);
  });

  it('a new heartbeat moves the deadline; a late one makes the peer available again', () => {
    const detector = new DeadlineFailureDetector();
    detector.heartbeat(0);
    detector.heartbeat(800);
    expect(detector.isAvailable(1799)).toBe(true);
    expect(detector.isAvailable(1800)).toBe(false);
    detector.heartbeat(5000);
    expect(detector.isAvailable(5999)).toBe(true);
    expect(detector.lastHeartbeatMs).toBe(5000);
  });

  it('is available exactly while less than the deadline has passed since the latest heartbeat', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 100_000 }), { minLength: 1, maxLength: 20 }),
        fc.integer({ min: 0, max: 200_000 }),
        (beats, at) => {
          const detector = new DeadlineFailureDetector();
          for (const t of beats) detector.heartbeat(t);
          const last = Math.max(...beats);
          expect(detector.isAvailable(at)).toBe(at < last + 1000);
        },
      ),
    );
  });

  it.each<[keyof DeadlineConfig, number]>([
    ['heartbeatIntervalMs', 0],
    ['heartbeatIntervalMs', Number.NaN],
    ['acceptableHeartbeatPauseMs', -1],
    ['acceptableHeartbeatPauseMs', Number.POSITIVE_INFINITY],
  ])('rejects %s = %s with a typed error', (field, value) => {
    const attempt = () => new DeadlineFailureDetector({ [field]: value });
    expect(attempt).toThrow(FailureDetectorConfigError);
    expect(attempt).toThrow(new RegExp(`${field} must be`));
  });
});

describe('createFailureDetector', () => {
  it('defaults to phi accrual', () => {
    expect(createFailureDetector()).toBeInstanceOf(PhiAccrualFailureDetector);
  });

  it('selects by kind and passes the settings on', () => {
    const phi = createFailureDetector({ kind: 'phi-accrual', threshold: 5 });
    expect(phi).toBeInstanceOf(PhiAccrualFailureDetector);
    expect((phi as PhiAccrualFailureDetector).config.threshold).toBe(5);
    const deadline = createFailureDetector({ kind: 'deadline', acceptableHeartbeatPauseMs: 200 });
    expect(deadline).toBeInstanceOf(DeadlineFailureDetector);
    expect(deadline.kind).toBe('deadline');
    expect((deadline as DeadlineFailureDetector).deadlineMs).toBe(400); // + the 200 ms default interval
  });

  it('rejects an unknown kind or bad settings with a typed error', () => {
    const unknownKind = { kind: 'timeout' } as unknown as FailureDetectorConfig;
    expect(() => createFailureDetector(unknownKind)).toThrow(FailureDetectorConfigError);
    expect(() => createFailureDetector(unknownKind)).toThrow(/kind must be 'phi-accrual' or 'deadline'/);
    expect(() => createFailureDetector({ kind: 'deadline', heartbeatIntervalMs: -5 })).toThrow(
      FailureDetectorConfigError,
    );
  });
});

describe('FailureDetectorRegistry', () => {
  const a = '10.0.0.1:2552#a1';
  const b = '10.0.0.2:2552#b1';

  it('treats an unknown peer as available and unmonitored', () => {
    const registry = new FailureDetectorRegistry({ kind: 'deadline' });
    expect(registry.isAvailable(a, 1e9)).toBe(true);
    expect(registry.isMonitoring(a)).toBe(false);
    expect(registry.get(a)).toBeUndefined();
  });

  it('keeps one detector per peer', () => {
    const registry = new FailureDetectorRegistry({ kind: 'deadline' });
    registry.heartbeat(a, 0);
    registry.heartbeat(b, 500);
    expect(registry.isAvailable(a, 1000)).toBe(false);
    expect(registry.isAvailable(b, 1000)).toBe(true);
    expect(registry.isMonitoring(b)).toBe(true);
    expect([...registry.keys()].sort()).toEqual([a, b]);
  });

  it('remove clears a peer history, so its next incarnation starts fresh', () => {
    const registry = new FailureDetectorRegistry();
    for (let t = 0; t <= 1000; t += 100) registry.heartbeat(a, t);
    expect(registry.isAvailable(a, 5000)).toBe(false);
    registry.remove(a);
    expect(registry.isMonitoring(a)).toBe(false);
    expect(registry.isAvailable(a, 5000)).toBe(true);
    registry.heartbeat(a, 6000);
    expect((registry.get(a) as PhiAccrualFailureDetector).intervalStats.samples).toBe(2); // just the seed
  });

  it('reset forgets every peer', () => {
    const registry = new FailureDetectorRegistry({ kind: 'deadline' });
    registry.heartbeat(a, 0);
    registry.heartbeat(b, 0);
    registry.reset();
    expect(registry.isAvailable(a, 1e6)).toBe(true);
    expect(registry.isAvailable(b, 1e6)).toBe(true);
    expect([...registry.keys()]).toEqual([]);
  });

  it('accepts a factory, called once per new peer', () => {
    const created: string[] = [];
    const registry = new FailureDetectorRegistry<string>((key): FailureDetector => {
      created.push(key);
      return new DeadlineFailureDetector({ acceptableHeartbeatPauseMs: 0, heartbeatIntervalMs: 10 });
    });
    registry.heartbeat(a, 0);
    registry.heartbeat(a, 5);
    expect(created).toEqual([a]);
    expect(registry.isAvailable(a, 14)).toBe(true);
    expect(registry.isAvailable(a, 15)).toBe(false);
  });

  it('rejects a bad config at construction, not on the first heartbeat', () => {
    expect(() => new FailureDetectorRegistry({ kind: 'phi-accrual', threshold: -1 })).toThrow(
      FailureDetectorConfigError,
    );
  });
});
