import { createHash, createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createSecureContext, type SecureContext } from 'node:tls';
import { InvalidConfigError } from '@doyen/core';
import type { WireTlsConfig } from './tls-config.js';

/** The three files' contents, as read from disk. */
export interface TlsFiles {
  readonly ca: Buffer;
  readonly cert: Buffer;
  readonly key: Buffer;
}

/** A checked CA, certificate and key: what a node serves and dials with until the files change. */
export interface TlsMaterial {
  readonly files: TlsFiles;
  /** SHA-256 of the three files: the reloader compares it to see whether anything changed. */
  readonly digest: string;
  /** The node's own (leaf) certificate. */
  readonly certificate: X509Certificate;
  /** Built once per file set and shared by every outbound dial until the next reload. */
  readonly secureContext: SecureContext;
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;
/** Longest chain walked from the node's certificate to a CA (leaf, intermediates, anchor). */
const MAX_CHAIN = 8;

/** Reads and checks the files now (startup, config validation); throws InvalidConfigError naming the file. */
export function loadTlsMaterial(config: WireTlsConfig, now = Date.now()): TlsMaterial {
  return checkTlsMaterial(config, readTlsFilesSync(config), now);
}

/** Reads the three files without blocking (the reloader's poll). */
export async function readTlsFiles(config: WireTlsConfig): Promise<TlsFiles> {
  const [ca, cert, key] = await Promise.all([
    readOrExplain(config.caFile, 'caFile'),
    readOrExplain(config.certFile, 'certFile'),
    readOrExplain(config.keyFile, 'keyFile'),
  ]);
  return { ca, cert, key };
}

export function digestOf(files: TlsFiles): string {
  const h = createHash('sha256');
  for (const b of [files.ca, files.cert, files.key]) h.update(String(b.length)).update(':').update(b);
  return h.digest('hex');
}

/**
 * Parses and checks a file set: PEM certificates and key, the key belongs to the certificate, the
 * certificate is valid now and chains to a CA of `caFile` that is valid now. A node whose own
 * certificate is expired or not yet valid refuses to start (and a reload refuses such files): its
 * peers would refuse every connection anyway, and failing at once names the cause.
 */
export function checkTlsMaterial(config: WireTlsConfig, files: TlsFiles, now: number): TlsMaterial {
  const cas = certificatesOf(files.ca, 'caFile', config.caFile);
  const chain = certificatesOf(files.cert, 'certFile', config.certFile);
  const certificate = chain[0]!;
  const key = privateKeyOf(files.key, config.keyFile);
  if (!certificate.checkPrivateKey(key)) {
    throw new InvalidConfigError(
      `wire.tls.keyFile ${config.keyFile}: the key does not belong to the certificate in ${config.certFile}`,
    );
  }
  checkValidity(certificate, now, `wire.tls.certFile ${config.certFile}`);
  const anchor = anchorOf(certificate, chain.slice(1), cas);
  if (!anchor) {
    throw new InvalidConfigError(
      `wire.tls.certFile ${config.certFile}: the certificate (issuer ${certificate.issuer}) is not signed by a CA in wire.tls.caFile ${config.caFile}`,
    );
  }
  checkValidity(anchor, now, `wire.tls.caFile ${config.caFile} (CA ${anchor.subject})`);
  let secureContext: SecureContext;
  try {
    secureContext = createSecureContext({ ca: files.ca, cert: files.cert, key: files.key });
  } catch (error) {
    throw new InvalidConfigError(
      `wire.tls: OpenSSL refused ${config.certFile} / ${config.keyFile}: ${(error as Error).message}`,
    );
  }
  return { files, digest: digestOf(files), certificate, secureContext };
}

/** Human-readable facts about a certificate for log lines (never the key). */
export function describeCertificate(c: X509Certificate): Record<string, string> {
  return { subject: c.subject, issuer: c.issuer, serial: c.serialNumber, validTo: c.validTo };
}

function readTlsFilesSync(config: WireTlsConfig): TlsFiles {
  const read = (path: string, field: string) => {
    try {
      return readFileSync(path);
    } catch (error) {
      throw unreadable(path, field, error);
    }
  };
  return {
    ca: read(config.caFile, 'caFile'),
    cert: read(config.certFile, 'certFile'),
    key: read(config.keyFile, 'keyFile'),
  };
}

async function readOrExplain(path: string, field: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (error) {
    throw unreadable(path, field, error);
  }
}

function unreadable(path: string, field: string, error: unknown): InvalidConfigError {
  const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
  return new InvalidConfigError(`wire.tls.${field} ${path}: cannot read the file (${code})`);
}

function certificatesOf(pem: Buffer, field: string, path: string): X509Certificate[] {
  const blocks = pem.toString('utf8').match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) {
    throw new InvalidConfigError(
      `wire.tls.${field} ${path}: no PEM certificate (-----BEGIN CERTIFICATE-----)`,
    );
  }
  return blocks.map((block, i) => {
    try {
      return new X509Certificate(block);
    } catch (error) {
      throw new InvalidConfigError(
        `wire.tls.${field} ${path}: certificate ${i + 1} is not a valid PEM certificate (${(error as Error).message})`,
      );
    }
  });
}

function privateKeyOf(pem: Buffer, path: string): KeyObject {
  try {
    return createPrivateKey(pem);
  } catch (error) {
    throw new InvalidConfigError(
      `wire.tls.keyFile ${path}: not an unencrypted PEM private key (${(error as Error).message})`,
    );
  }
}

function checkValidity(c: X509Certificate, now: number, what: string): void {
  const from = Date.parse(c.validFrom);
  const to = Date.parse(c.validTo);
  if (now < from) throw new InvalidConfigError(`${what}: not valid before ${c.validFrom} (not yet valid)`);
  if (now > to) throw new InvalidConfigError(`${what}: expired on ${c.validTo}`);
}

/**
 * The CA of `cas` the certificate chains to, through the intermediates sent with it, or undefined.
 * (OpenSSL checks the same again on every connection; this is to refuse bad files up front.)
 */
function anchorOf(
  leaf: X509Certificate,
  intermediates: readonly X509Certificate[],
  cas: readonly X509Certificate[],
): X509Certificate | undefined {
  const issued = (child: X509Certificate, parent: X509Certificate) =>
    child.checkIssued(parent) && child.verify(parent.publicKey);
  let current = leaf;
  for (let depth = 0; depth < MAX_CHAIN; depth++) {
    const anchor = cas.find((ca) => issued(current, ca));
    if (anchor) return anchor;
    const next = intermediates.find((i) => i.ca && issued(current, i));
    if (!next) return undefined;
    current = next;
  }
  return undefined;
}
