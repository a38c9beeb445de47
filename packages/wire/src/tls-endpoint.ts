import { createServer, type Server } from 'node:https';
import type { ConnectionOptions, TLSSocket } from 'node:tls';
import { type ActorSystem, RateLimitedLog } from '@doyen/core';
import type { WireTlsConfig } from './tls-config.js';
import { acceptTlsFailure, certificateVerdict, type TlsFailure } from './tls-errors.js';
import { describeCertificate, loadTlsMaterial, type TlsMaterial } from './tls-material.js';
import { TlsReloader } from './tls-reloader.js';

/** What an outbound `wss` dial adds to its ws options: the current certificate, and the checks. */
export type TlsDialOptions = Pick<
  ConnectionOptions,
  'secureContext' | 'rejectUnauthorized' | 'minVersion' | 'checkServerIdentity'
>;

/**
 * Mutual TLS for one node: the `https` server the WebSocket server runs on, the options every
 * outbound dial uses, and the reloader that swaps both when the files change.
 *
 * Every connection must present a certificate chaining to the cluster CA. Node's own
 * `rejectUnauthorized` on a server drops such a connection without saying why; so the server
 * asks for the certificate, and the first listener of every connection checks `authorized`
 * itself, logs the reason (expired, unknown CA, none presented) and destroys the socket before
 * a byte of HTTP is read.
 */
export class TlsEndpoint {
  readonly server: Server;
  private current: TlsMaterial;
  private reloader: TlsReloader | undefined;
  private system: ActorSystem | undefined;
  private rejectLog: RateLimitedLog | undefined;

  private constructor(
    private readonly config: WireTlsConfig,
    material: TlsMaterial,
    handshakeTimeoutMs: number,
  ) {
    this.server = createServer({
      ca: material.files.ca,
      cert: material.files.cert,
      key: material.files.key,
      requestCert: true,
      noDelay: true, // as http servers: handshake messages are small and waited for
      rejectUnauthorized: false, // checked in `authorize`, which says why
      minVersion: 'TLSv1.2',
      // the default is 120 s: an unauthenticated peer must not hold a socket longer than the wire handshake
      handshakeTimeout: handshakeTimeoutMs,
    });
    this.server.prependListener('secureConnection', (socket: TLSSocket) => this.authorize(socket));
    this.server.on('tlsClientError', (error: Error, socket: TLSSocket) =>
      this.refused(acceptTlsFailure(error), socket.remoteAddress, socket.remotePort),
    );
    this.current = material;
  }

  /** Loads and checks the files (InvalidConfigError naming the file), and creates the server. */
  static create(config: WireTlsConfig, handshakeTimeoutMs: number): TlsEndpoint {
    return new TlsEndpoint(config, loadTlsMaterial(config), handshakeTimeoutMs);
  }

  /** The node's actor system exists once the server is bound: logging and reloads start now. */
  attach(system: ActorSystem): void {
    this.system = system;
    this.rejectLog = new RateLimitedLog(system.logger, () => Date.now(), 20);
    this.reloader = new TlsReloader(this.config, this.current, system.logger, (next) => {
      // new handshakes use it; established connections keep the session they negotiated
      this.server.setSecureContext({ ca: next.files.ca, cert: next.files.cert, key: next.files.key });
      this.current = next;
    });
    this.reloader.start();
    system.logger.info(
      {
        event: 'wire.tls.enabled',
        certificate: describeCertificate(this.current.certificate),
        verifyHostname: this.config.verifyHostname ?? false,
      },
      `mutual TLS on: certificate ${this.current.certificate.serialNumber}, peers must chain to ${this.config.caFile}`,
    );
  }

  /** The certificate this node serves and dials with now. */
  get material(): TlsMaterial {
    return this.current;
  }

  /** Polls the files at once (tests; the timer does it every `reloadIntervalMs`). */
  reloadNow(): Promise<boolean> {
    return this.reloader?.check() ?? Promise.resolve(false);
  }

  /** Options for one outbound dial, read at dial time so a reload applies to the next connection. */
  readonly dialOptions = (): TlsDialOptions => ({
    secureContext: this.current.secureContext,
    rejectUnauthorized: true,
    minVersion: 'TLSv1.2',
    // Off by default: the CA is the trust anchor and the HMAC handshake binds the node's identity;
    // members are mostly dialled by pod IP, which certificates rarely name.
    ...(this.config.verifyHostname || this.config.bindIdentity
      ? {}
      : { checkServerIdentity: () => undefined }),
  });

  async close(): Promise<void> {
    this.reloader?.stop();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private authorize(socket: TLSSocket): void {
    if (socket.authorized) return;
    const peer = socket.getPeerCertificate();
    const presented = peer && Object.keys(peer).length > 0;
    // Node types it as an Error; at run time it is OpenSSL's verify code as a string.
    const verifyCode = String(socket.authorizationError ?? 'UNAUTHORIZED');
    const failure: TlsFailure = presented
      ? {
          code: verifyCode,
          reason: `${certificateVerdict(verifyCode) ?? 'the certificate was refused'} (subject ${flat(peer.subject)}, issuer ${flat(peer.issuer)})`,
        }
      : { code: 'NO_CLIENT_CERTIFICATE', reason: 'the peer presented no certificate' };
    this.refused(failure, socket.remoteAddress, socket.remotePort);
    socket.destroy();
  }

  private refused(failure: TlsFailure, address: string | undefined, port: number | undefined): void {
    const peer = `${address ?? '?'}:${port ?? '?'}`;
    if (!this.system || !this.rejectLog) return; // before the node exists: refused, unlogged
    this.system.metrics.inc('doyen_wire_rejected_total', 'Inbound input refused at the boundary', {
      reason: 'tls',
    });
    this.rejectLog.warn(
      `tls:${failure.code}`,
      { event: 'wire.tls.rejected', code: failure.code, reason: failure.reason, peer },
      `refused a TLS connection from ${peer}: ${failure.reason} (${failure.code})`,
    );
  }
}

function flat(name: unknown): string {
  if (!name || typeof name !== 'object') return '?';
  return Object.entries(name as Record<string, unknown>)
    .map(([k, v]) => `${k}=${String(v)}`)
    .join(',');
}
