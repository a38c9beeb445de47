import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { InvalidConfigError } from '../../packages/core/src/index.js';
import {
  createNodeLogger,
  type NodeConfig,
  resolveSecrets,
  SecretFilePermissionsError,
  startNode,
  validateNodeConfig,
} from '../../packages/doyen/src/index.js';
import { captureLogger } from '../../packages/testkit/src/index.js';
import { freePorts } from '../support/cluster-nodes.js';
import { nodesClosedAfterEach } from '../support/doyen-nodes.js';

const nodes = nodesClosedAfterEach();

const base: NodeConfig = {
  cluster: 'c',
  host: '127.0.0.1',
  port: 1,
  seeds: [{ host: '127.0.0.1', port: 1 }],
};
const tls = { caFile: '/etc/doyen/ca.pem', certFile: '/etc/doyen/node.pem', keyFile: '/etc/doyen/node.key' };

describe('secure by default: a node needs a secret, TLS or an explicit insecure', () => {
  it('refuses a config with neither secret nor TLS, telling the three ways', async () => {
    for (const config of [base, { ...base, secret: '' }, { ...base, wire: { secret: '' } }]) {
      const thrown = (() => {
        try {
          validateNodeConfig(config);
        } catch (error) {
          return error;
        }
      })();
      expect(thrown).toBeInstanceOf(InvalidConfigError);
      const message = (thrown as Error).message;
      for (const way of ['DOYEN_SECRET', '--secret-file', '--tls-ca', '--insecure'])
        expect(message).toContain(way);
    }
    const [p] = await freePorts(1);
    await expect(startNode({ ...base, port: p!, seeds: [{ host: '127.0.0.1', port: p! }] })).rejects.toThrow(
      InvalidConfigError,
    );
  });

  it('accepts a secret, wire.tls (all three files) or insecure; a partial wire.tls is refused', () => {
    expect(validateNodeConfig({ ...base, secret: 's' }).secret).toBe('s');
    expect(validateNodeConfig({ ...base, wire: { secret: 's' } }).wire?.secret).toBe('s');
    expect(validateNodeConfig({ ...base, wire: { tls } }).wire?.tls).toEqual(tls);
    expect(validateNodeConfig({ ...base, insecure: true }).insecure).toBe(true);
    expect(() => validateNodeConfig({ ...base, wire: { tls: { ...tls, keyFile: '' } } })).toThrow(
      /all three or none/,
    );
  });

  it('validates the management settings', () => {
    const ok = { ...base, secret: 's' };
    expect(() => validateNodeConfig({ ...ok, httpToken: ' ' })).toThrow(/management token/);
    expect(() => validateNodeConfig({ ...ok, httpAllowedOrigins: ['https://ops.example/path'] })).toThrow(
      /scheme:\/\/host/,
    );
    expect(() => validateNodeConfig({ ...ok, httpAllowedOrigins: ['ftp://ops.example'] })).toThrow(
      /scheme:\/\/host/,
    );
    expect(() => validateNodeConfig({ ...ok, httpTls: { certFile: 'c.pem', keyFile: '' } })).toThrow(
      /--http-tls-key/,
    );
    expect(validateNodeConfig({ ...ok, httpAllowedOrigins: ['https://ops.example:8443'] })).toBeTruthy();
  });

  it('insecure starts, with a loud wire.insecure warning; a node with a secret does not warn', async () => {
    const [p1, p2] = await freePorts(2);
    const lines: string[] = [];
    const insecure = await startNode(
      { ...base, port: p1!, seeds: [{ host: '127.0.0.1', port: p1! }], insecure: true },
      { logger: captureLogger(lines, Date.now, 'info') },
    );
    nodes.push(insecure);
    const warning = lines.map((l) => JSON.parse(l)).find((e) => e.event === 'wire.insecure');
    expect(warning).toMatchObject({ level: 40, port: p1 });
    expect(warning.msg).toMatch(/INSECURE/);

    const secured: string[] = [];
    nodes.push(
      await startNode(
        { ...base, cluster: 'c2', port: p2!, seeds: [{ host: '127.0.0.1', port: p2! }], secret: 's' },
        { logger: captureLogger(secured, Date.now, 'info') },
      ),
    );
    expect(secured.some((l) => l.includes('wire.insecure'))).toBe(false);
  });
});

describe('secret sources', () => {
  const dir = mkdtempSync(join(tmpdir(), 'doyen-secret-sources-'));

  it('reads the trimmed secret file, or DOYEN_SECRET; a file beats the environment', () => {
    const file = join(dir, 'secret');
    writeFileSync(file, '  from-file \n', { mode: 0o600 });
    expect(resolveSecrets({ secretFile: file, env: {} }).secret).toBe('from-file');
    expect(resolveSecrets({ secretFile: file, env: { DOYEN_SECRET: 'from-env' } }).secret).toBe('from-file');
    expect(resolveSecrets({ env: { DOYEN_SECRET: 'from-env' } }).secret).toBe('from-env');
    expect(resolveSecrets({ env: {} }).secret).toBeUndefined();
    expect(resolveSecrets({ env: { DOYEN_HTTP_TOKEN: 't0k' } }).httpToken).toBe('t0k');
  });

  it('refuses an unreadable or empty file, an empty variable, and --secret with --secret-file', () => {
    const empty = join(dir, 'empty');
    writeFileSync(empty, ' \n', { mode: 0o600 });
    expect(() => resolveSecrets({ secretFile: join(dir, 'missing'), env: {} })).toThrow(
      /cannot read the secret file .*missing/,
    );
    expect(() => resolveSecrets({ secretFile: empty, env: {} })).toThrow(/secret file .* is empty/);
    expect(() => resolveSecrets({ httpTokenFile: empty, env: {} })).toThrow(
      /management token file .* is empty/,
    );
    expect(() => resolveSecrets({ env: { DOYEN_SECRET: '' } })).toThrow(/DOYEN_SECRET is set but empty/);
    expect(() => resolveSecrets({ secretFlag: 's', secretFile: empty, env: {} })).toThrow(/not both/);
  });

  it('--secret still works, with a warning that argv shows it', () => {
    const flag = resolveSecrets({ secretFlag: 'on-argv', env: {} });
    expect(flag.secret).toBe('on-argv');
    expect(flag.warnings.map((w) => w.event)).toEqual(['secret.on-argv']);
    expect(flag.warnings[0]!.message).not.toContain('on-argv');
  });

  it('refuses a secret or token file other users can read, naming the chmod to run; 0600 and 0400 are accepted', () => {
    for (const mode of [0o600, 0o400]) {
      const owned = join(dir, `owned-${mode.toString(8)}`);
      writeFileSync(owned, 'only-mine\n', { mode });
      chmodSync(owned, mode); // the umask may have taken bits away, never added: make it exact
      expect(resolveSecrets({ secretFile: owned, httpTokenFile: owned, env: {} })).toEqual({
        secret: 'only-mine',
        httpToken: 'only-mine',
        warnings: [],
      });
    }
    for (const mode of [0o644, 0o640, 0o604, 0o620]) {
      const open = join(dir, `open-${mode.toString(8)}`);
      writeFileSync(open, 'readable-by-others\n');
      chmodSync(open, mode);
      for (const sources of [
        { secretFile: open, env: {} },
        { httpTokenFile: open, env: {} },
      ]) {
        let thrown: unknown;
        try {
          resolveSecrets(sources);
        } catch (error) {
          thrown = error;
        }
        expect(thrown).toBeInstanceOf(SecretFilePermissionsError);
        expect(thrown).toBeInstanceOf(InvalidConfigError);
        const message = (thrown as Error).message;
        expect(message).toContain(`chmod 600 ${open}`);
        expect(message).toContain(`0${mode.toString(8)}`);
        expect(message).toMatch(sources.secretFile ? /the secret file/ : /the management token file/);
        expect(message).not.toContain('readable-by-others');
      }
      // the refusal is the mode alone: the same file, once chmod 600, is read
      chmodSync(open, 0o600);
      expect(resolveSecrets({ secretFile: open, env: {} }).secret).toBe('readable-by-others');
    }
  });
});

describe('the node logger redacts secrets', () => {
  it('replaces the secret and the token wherever a field carries them', () => {
    const secret = randomBytes(16).toString('hex');
    const token = randomBytes(16).toString('hex');
    let out = '';
    const destination = new Writable({
      write(chunk, _encoding, done) {
        out += String(chunk);
        done();
      },
    });
    const logger = createNodeLogger({ level: 'info', destination });
    logger.info(
      { event: 'test.config', config: { cluster: 'visible-cluster', secret, httpToken: token } },
      'x',
    );
    logger.info({ event: 'test.wire', config: { wire: { secret } } }, 'x');
    logger.info({ event: 'test.flat', secret, token, headers: { authorization: `Bearer ${token}` } }, 'x');
    logger.info({ event: 'test.request', req: { headers: { authorization: `Bearer ${token}` } } }, 'x');
    // positive control: the lines were written, with the other fields intact
    expect(out).toContain('visible-cluster');
    expect(out.split('\n').filter(Boolean)).toHaveLength(4);
    expect(out).toContain('[Redacted]');
    expect(out).not.toContain(secret);
    expect(out).not.toContain(token);
  });
});
