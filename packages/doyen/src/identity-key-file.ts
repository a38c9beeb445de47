import { existsSync, writeFileSync } from 'node:fs';
import { InvalidConfigError } from '@doyen/core';
import { NodeIdentity } from '@doyen/wire';
import { readSecretFile } from './secret-sources.js';

/**
 * The PEM of a node's stable identity key (`identityKeyFile`): read from the file, refused like a
 * secret file when other users may access it, or created there (mode 0600, never overwriting) on
 * the first start. Every incarnation of the node then signs with the same key, so a restart
 * proves it is the member it replaces and is admitted at once.
 */
export function loadOrCreateIdentityKey(path: string): string {
  if (!existsSync(path)) {
    const pem = NodeIdentity.generate().toPem();
    try {
      writeFileSync(path, pem, { mode: 0o600, flag: 'wx' });
      return pem;
    } catch (error) {
      // another process created it between the check and the write: read that one
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST')
        throw new InvalidConfigError(
          `cannot create the identity key file ${path}: ${(error as Error).message}`,
        );
    }
  }
  const pem = `${readSecretFile(path, 'identity key').value}\n`;
  NodeIdentity.fromPem(pem, `the identity key file ${path}`);
  return pem;
}
