// What the soak bench and its app module (soak-app.ts, run inside each `doyen node`) agree on: the
// singleton's name, the `event` fields of the app's log lines, and the settings the bench hands the
// app in the environment (an app module takes no flags of its own).

export const SOAK_SINGLETON = 'soak-counter';

/** An ask answered through the proxy: `seq`, `ms`, `count`. */
export const SOAK_ANSWERED_EVENT = 'soak.answered';
/** An ask that failed: `seq`, `ms`, `error` (the error's message). */
export const SOAK_FAILED_EVENT = 'soak.failed';
/** Every tally period: `sent`, `answered`, `failed`, `pending`, `oldestPendingMs`, `gapMs`. */
export const SOAK_TALLY_EVENT = 'soak.tally';
/** Every memory period, after a full GC: `heapUsed`, `codeSpace` (its compiled code), `heapTotal`, `rss`, `external` (bytes), `uptimeMs`. */
export const SOAK_MEMORY_EVENT = 'soak.memory';

export interface SoakAppSettings {
  readonly askEveryMs: number;
  readonly askTimeoutMs: number;
  readonly tallyEveryMs: number;
  readonly memoryEveryMs: number;
}

export const defaultSoakAppSettings: SoakAppSettings = {
  askEveryMs: 50,
  askTimeoutMs: 3_000,
  tallyEveryMs: 1_000,
  memoryEveryMs: 5_000,
};

const ENV: Record<keyof SoakAppSettings, string> = {
  askEveryMs: 'SOAK_ASK_EVERY_MS',
  askTimeoutMs: 'SOAK_ASK_TIMEOUT_MS',
  tallyEveryMs: 'SOAK_TALLY_EVERY_MS',
  memoryEveryMs: 'SOAK_MEMORY_EVERY_MS',
};

/** The environment that hands `settings` to the app. */
export function soakAppEnv(settings: SoakAppSettings): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of Object.keys(ENV) as (keyof SoakAppSettings)[]) env[ENV[key]] = String(settings[key]);
  return env;
}

/** The app's settings from its environment; a missing or unusable value takes the default. */
export function soakAppSettings(env: Readonly<Record<string, string | undefined>>): SoakAppSettings {
  const read = (key: keyof SoakAppSettings): number => {
    const value = Number(env[ENV[key]]);
    return Number.isFinite(value) && value > 0 ? value : defaultSoakAppSettings[key];
  };
  return {
    askEveryMs: read('askEveryMs'),
    askTimeoutMs: read('askTimeoutMs'),
    tallyEveryMs: read('tallyEveryMs'),
    memoryEveryMs: read('memoryEveryMs'),
  };
}
