import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTlsMaterial, TlsReloader } from '../../packages/wire/src/index.js';
import { requireOpenssl, TestPki } from '../support/certificates.js';

let pki: TestPki;
beforeAll(() => {
  pki = TestPki.create();
});
afterAll(() => pki.remove());

function capture() {
  const logs: Record<string, unknown>[] = [];
  const logger = pino(
    { level: 'info', base: undefined },
    { write: (l: string) => void logs.push(JSON.parse(l)) },
  );
  return { logs, logger };
}

describe('TLS reloader', () => {
  it('swaps in a changed file set once, and keeps the old one while the new set is broken', async () => {
    const first = pki.issue('r1');
    const live = pki.liveFiles('r', first);
    const config = { caFile: pki.caFile, certFile: live.certFile, keyFile: live.keyFile };
    const { logs, logger } = capture();
    const swapped: string[] = [];
    const reloader = new TlsReloader(config, loadTlsMaterial(config), logger, (m) =>
      swapped.push(m.certificate.serialNumber),
    );
    expect(await reloader.check()).toBe(false); // unchanged files: nothing happens
    const second = pki.issue('r2');
    live.installCertificateOnly(second);
    expect(await reloader.check()).toBe(false);
    expect(await reloader.check()).toBe(false); // the same broken set is logged once
    expect(logs.filter((l) => l.event === 'wire.tls.reload-refused')).toHaveLength(1);
    expect(reloader.current.certificate.serialNumber).toBe(first.serial);
    live.install(second);
    expect(await reloader.check()).toBe(true);
    expect(swapped).toEqual([second.serial]);
    expect(reloader.current.certificate.serialNumber).toBe(second.serial);
    expect(logs.filter((l) => l.event === 'wire.tls.reloaded')).toHaveLength(1);
  });

  it('says once that the running certificate has expired', async () => {
    const cert = pki.issue('short');
    const config = pki.tlsFor(cert);
    const { logs, logger } = capture();
    const reloader = new TlsReloader(config, loadTlsMaterial(config), logger, () => {});
    await reloader.check(); // positive control: valid now, nothing said
    expect(logs.filter((l) => l.event === 'wire.tls.expired')).toHaveLength(0);
    const later = Date.now() + 3 * 24 * 3_600_000;
    await reloader.check(later);
    await reloader.check(later);
    const expired = logs.filter((l) => l.event === 'wire.tls.expired');
    expect(expired).toHaveLength(1);
    expect(expired[0]!.certificate).toMatchObject({ serial: cert.serial });
  });
});

describe('test certificates', () => {
  it('fail, naming openssl, when openssl is not installed', () => {
    expect(() => requireOpenssl({ PATH: '/nonexistent' })).toThrow(/openssl is required.*ENOENT/);
    expect(() => requireOpenssl()).not.toThrow();
  });
});
