import { readFileSync, statSync } from 'node:fs';
import { InvalidConfigError } from '@doyen/core';

/** The environment variables `doyen node` reads its secrets from (argv is visible to every local user in `ps`). */
export const SECRET_ENV = 'DOYEN_SECRET';
export const HTTP_TOKEN_ENV = 'DOYEN_HTTP_TOKEN';

/** Where the CLI found its secrets, before it reads them. */
export interface SecretSources {
  /** `--secret S`: still accepted, with a warning. */
  readonly secretFlag?: string | undefined;
  readonly secretFile?: string | undefined;
  readonly httpTokenFile?: string | undefined;
  readonly env: Readonly<Record<string, string | undefined>>;
}

/** A warning to log once the logger exists (never with the secret in it). */
export interface SecretWarning {
  readonly event: string;
  readonly message: string;
}

export interface ResolvedSecrets {
  readonly secret?: string;
  readonly httpToken?: string;
  readonly warnings: readonly SecretWarning[];
}

/** The trimmed content of a secret file; a missing, unreadable or empty file is a config error. */
export function readSecretFile(path: string, what: string): { value: string; warning?: SecretWarning } {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new InvalidConfigError(`cannot read the ${what} file ${path}: ${(error as Error).message}`);
  }
  const value = text.trim();
  if (value === '') throw new InvalidConfigError(`the ${what} file ${path} is empty`);
  let warning: SecretWarning | undefined;
  try {
    if ((statSync(path).mode & 0o077) !== 0)
      warning = {
        event: 'secret.file-permissions',
        message: `the ${what} file ${path} is readable by other users: chmod 600 it`,
      };
  } catch {
    // it was just read: a stat failure here changes nothing
  }
  return { value, ...(warning ? { warning } : {}) };
}

/**
 * The cluster secret and management token from flags and environment. Files and flags win over
 * the environment; `--secret` with `--secret-file` is ambiguous and refused. Undefined when none
 * is given (the config file may still carry one; `validateNodeConfig` decides what is missing).
 */
export function resolveSecrets(sources: SecretSources): ResolvedSecrets {
  const warnings: SecretWarning[] = [];
  if (sources.secretFlag !== undefined && sources.secretFile !== undefined)
    throw new InvalidConfigError('give the cluster secret once: --secret-file F or --secret S, not both');
  let secret: string | undefined;
  if (sources.secretFile !== undefined) {
    const read = readSecretFile(sources.secretFile, 'secret');
    secret = read.value;
    if (read.warning) warnings.push(read.warning);
  } else if (sources.secretFlag !== undefined) {
    if (sources.secretFlag === '') throw new InvalidConfigError('--secret is empty');
    secret = sources.secretFlag;
    warnings.push({
      event: 'secret.on-argv',
      message: `--secret puts the cluster secret on the command line, where \`ps\` shows it to every local user: use ${SECRET_ENV} or --secret-file F`,
    });
  } else if (sources.env[SECRET_ENV] !== undefined) {
    secret = sources.env[SECRET_ENV].trim();
    if (secret === '') throw new InvalidConfigError(`${SECRET_ENV} is set but empty`);
  }
  let httpToken: string | undefined;
  if (sources.httpTokenFile !== undefined) {
    const read = readSecretFile(sources.httpTokenFile, 'management token');
    httpToken = read.value;
    if (read.warning) warnings.push(read.warning);
  } else if (sources.env[HTTP_TOKEN_ENV] !== undefined) {
    httpToken = sources.env[HTTP_TOKEN_ENV].trim();
    if (httpToken === '') throw new InvalidConfigError(`${HTTP_TOKEN_ENV} is set but empty`);
  }
  return {
    ...(secret !== undefined ? { secret } : {}),
    ...(httpToken !== undefined ? { httpToken } : {}),
    warnings,
  };
}
