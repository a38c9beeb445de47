import { closeSync, constants, fstatSync, openSync, readFileSync } from 'node:fs';
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

/**
 * A secret file other users may read (or write): refused, as ssh refuses such a private key.
 * Still an InvalidConfigError, so the CLI exits as for any other bad setting.
 */
export class SecretFilePermissionsError extends InvalidConfigError {
  constructor(
    readonly path: string,
    readonly mode: number,
    what: string,
  ) {
    super(
      `the ${what} file ${path} is accessible by other users (mode 0${(mode & 0o777).toString(8)}): ` +
        `run \`chmod 600 ${path}\` and start again`,
    );
  }
}

/** Group and other bits: any of them lets another local user read or replace the secret. */
const OTHERS = 0o077;

/**
 * The trimmed content of a secret file; a missing, unreadable or empty file is a config error, and
 * so is one others can access. The mode is read from the descriptor the secret is read from, so
 * a file swapped between the check and the read cannot slip through.
 */
export function readSecretFile(path: string, what: string): { value: string } {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY);
  } catch (error) {
    throw new InvalidConfigError(`cannot read the ${what} file ${path}: ${(error as Error).message}`);
  }
  let text: string;
  try {
    const mode = fstatSync(fd).mode;
    if ((mode & OTHERS) !== 0) throw new SecretFilePermissionsError(path, mode, what);
    text = readFileSync(fd, 'utf8');
  } catch (error) {
    if (error instanceof InvalidConfigError) throw error;
    throw new InvalidConfigError(`cannot read the ${what} file ${path}: ${(error as Error).message}`);
  } finally {
    closeSync(fd);
  }
  const value = text.trim();
  if (value === '') throw new InvalidConfigError(`the ${what} file ${path} is empty`);
  return { value };
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
    secret = readSecretFile(sources.secretFile, 'secret').value;
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
    httpToken = readSecretFile(sources.httpTokenFile, 'management token').value;
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
