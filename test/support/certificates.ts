// Real certificates for the mutual-TLS tests and bench, made with Debian's `openssl` at run time in a
// temp dir: a cluster CA, node certificates it signs (SAN IP:127.0.0.1, DNS:localhost), a foreign CA,
// and certificates with any validity window (expired, not yet valid), which `openssl ca` can backdate.
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface IssuedCertificate {
  readonly certFile: string;
  readonly keyFile: string;
  /** As Node reports it (`X509Certificate.serialNumber`, `getPeerCertificate().serialNumber`). */
  readonly serial: string;
}

export interface IssueOptions {
  /** Which CA signs it: the cluster's (default) or the foreign one. */
  readonly ca?: 'cluster' | 'foreign';
  /** Validity window; default from an hour ago to a day ahead. */
  readonly notBefore?: Date;
  readonly notAfter?: Date;
}

export interface LiveFiles extends IssuedCertificate {
  install(next: IssuedCertificate): void;
  installCertificateOnly(next: IssuedCertificate): void;
}

const HOUR = 3_600_000;

/** One temp-dir PKI per test file; `remove()` it afterwards. */
export class TestPki {
  private counter = 0;

  private constructor(
    readonly dir: string,
    /** The cluster CA every node trusts. */
    readonly caFile: string,
    private readonly foreignDir: string,
  ) {}

  static create(): TestPki {
    requireOpenssl();
    const dir = mkdtempSync(join(tmpdir(), 'doyen-pki-'));
    const cluster = makeCa(dir, 'cluster-ca', 'doyen test cluster CA');
    const foreign = makeCa(dir, 'foreign-ca', 'doyen test foreign CA');
    return new TestPki(dir, join(cluster, 'ca.crt'), foreign);
  }

  /** Another CA, which the cluster does not trust. */
  get foreignCaFile(): string {
    return join(this.foreignDir, 'ca.crt');
  }

  /** A node certificate and key in new files. */
  issue(name: string, options: IssueOptions = {}): IssuedCertificate {
    const caDir = options.ca === 'foreign' ? this.foreignDir : join(this.dir, 'cluster-ca');
    const base = join(this.dir, `${name}-${++this.counter}`);
    const now = Date.now();
    openssl([
      'req',
      '-new',
      ...newP256Key(`${base}.key`),
      ...['-out', `${base}.csr`, '-subj', `/CN=${name}`, '-config', join(caDir, 'openssl.cnf')],
    ]);
    openssl([
      ...['ca', '-batch', '-notext', '-config', join(caDir, 'openssl.cnf'), '-extensions', 'node_cert'],
      ...['-in', `${base}.csr`, '-out', `${base}.crt`],
      ...['-startdate', asn1Time(options.notBefore ?? new Date(now - HOUR))],
      ...['-enddate', asn1Time(options.notAfter ?? new Date(now + 24 * HOUR))],
    ]);
    const certFile = `${base}.crt`;
    return {
      certFile,
      keyFile: `${base}.key`,
      serial: new X509Certificate(readFileSync(certFile)).serialNumber,
    };
  }

  /** `wire.tls` for a node with this certificate, trusting the cluster CA. */
  tlsFor(cert: IssuedCertificate, extra: { reloadIntervalMs?: number; verifyHostname?: boolean } = {}) {
    return { caFile: this.caFile, certFile: cert.certFile, keyFile: cert.keyFile, ...extra };
  }

  /**
   * Files a running node is pointed at, so a test can rotate them: `install` copies a certificate and
   * key over them (as cert-manager rewrites a secret), `installCertificateOnly` half of that.
   */
  liveFiles(name: string, cert: IssuedCertificate): LiveFiles {
    const dir = join(this.dir, `live-${name}-${++this.counter}`);
    mkdirSync(dir);
    const live = { certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key') };
    // each file replaced at once (copy, then rename), as a secret update swaps it: the reloader
    // polls and must never catch a half-written file
    const replace = (from: string, to: string) => {
      copyFileSync(from, `${to}.next`);
      renameSync(`${to}.next`, to);
    };
    const installCertificateOnly = (next: IssuedCertificate) => replace(next.certFile, live.certFile);
    const install = (next: IssuedCertificate) => {
      replace(next.keyFile, live.keyFile);
      installCertificateOnly(next);
    };
    install(cert);
    return { ...live, serial: cert.serial, install, installCertificateOnly };
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Fails (never skips) when openssl is missing: CI installs Debian's `openssl` for these tests. */
export function requireOpenssl(env: NodeJS.ProcessEnv = process.env): void {
  try {
    execFileSync('openssl', ['version'], { stdio: 'pipe', env });
  } catch (error) {
    throw new Error(
      `openssl is required to generate the TLS test certificates (apt-get install openssl): ${(error as Error).message}`,
    );
  }
}

function makeCa(root: string, name: string, commonName: string): string {
  const dir = join(root, name);
  mkdirSync(join(dir, 'issued'), { recursive: true });
  writeFileSync(join(dir, 'index.txt'), '');
  writeFileSync(join(dir, 'openssl.cnf'), caConfig(dir));
  openssl([
    'req',
    '-x509',
    ...newP256Key(join(dir, 'ca.key')),
    ...['-out', join(dir, 'ca.crt'), '-subj', `/CN=${commonName}`, '-days', '30'],
    ...['-config', join(dir, 'openssl.cnf'), '-extensions', 'ca_cert'],
  ]);
  return dir;
}

/** A minimal `openssl ca` setup: its own database, random serials, SANs for 127.0.0.1 and localhost. */
function caConfig(dir: string): string {
  return `[ req ]
distinguished_name = req_dn
prompt = no
[ req_dn ]
CN = unused
[ ca ]
default_ca = test_ca
[ test_ca ]
dir = ${dir}
database = $dir/index.txt
new_certs_dir = $dir/issued
certificate = $dir/ca.crt
private_key = $dir/ca.key
rand_serial = yes
default_md = sha256
policy = any_name
unique_subject = no
email_in_dn = no
[ any_name ]
commonName = supplied
[ ca_cert ]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[ node_cert ]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
authorityKeyIdentifier = keyid
`;
}

/** `openssl req` arguments for a new unencrypted P-256 key written to `keyFile`. */
function newP256Key(keyFile: string): string[] {
  return ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', keyFile];
}

function openssl(args: string[]): void {
  try {
    execFileSync('openssl', args, { stdio: 'pipe' });
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString() ?? '';
    throw new Error(`openssl ${args[0]} failed: ${stderr || (error as Error).message}`);
  }
}

/** `openssl ca -startdate/-enddate` format: YYYYMMDDHHMMSSZ, UTC. */
function asn1Time(d: Date): string {
  return `${d.toISOString().replace(/[-:T]/g, '').slice(0, 14)}Z`;
}
