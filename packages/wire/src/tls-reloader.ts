import type { Logger } from '@doyen/core';
import type { WireTlsConfig } from './tls-config.js';
import {
  checkTlsMaterial,
  describeCertificate,
  digestOf,
  readTlsFiles,
  type TlsMaterial,
} from './tls-material.js';

export const DEFAULT_TLS_RELOAD_INTERVAL_MS = 10_000;

/**
 * Keeps a node's TLS material current: re-reads the three files every `reloadIntervalMs` and,
 * when their contents changed and the new set passes every check, makes it current and tells
 * `onReload` (which swaps the server's context; dials read `current`). Open connections are
 * never touched. A set that fails a check (a half-written rotation: new certificate, old key)
 * is logged once and ignored; the old material stays until a good set appears.
 *
 * Polling, not fs.watch: Kubernetes updates a mounted secret by swapping a symlink to a new
 * directory, which watchers on the files miss; reading three small files every few seconds is cheap.
 */
export class TlsReloader {
  private timer: NodeJS.Timeout | undefined;
  private refusedDigest: string | undefined;
  private expiryLogged = false;
  private stopped = false;

  constructor(
    private readonly config: WireTlsConfig,
    private material: TlsMaterial,
    private readonly logger: Logger,
    private readonly onReload: (material: TlsMaterial) => void,
  ) {}

  get current(): TlsMaterial {
    return this.material;
  }

  start(): void {
    this.schedule();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** One poll: reload if the files changed. Resolves true when new material became current. */
  async check(now = Date.now()): Promise<boolean> {
    let files: Awaited<ReturnType<typeof readTlsFiles>>;
    try {
      files = await readTlsFiles(this.config);
    } catch (error) {
      // a rotation may remove and recreate a file: the next poll tries again
      return this.refuse(`unreadable:${(error as Error).message}`, error as Error);
    }
    if (this.stopped) return false;
    const digest = digestOf(files);
    if (digest !== this.material.digest && digest !== this.refusedDigest) {
      try {
        const next = checkTlsMaterial(this.config, files, now);
        this.onReload(next);
        const previous = this.material.certificate;
        this.material = next;
        this.refusedDigest = undefined;
        this.expiryLogged = false;
        this.logger.info(
          {
            event: 'wire.tls.reloaded',
            certificate: describeCertificate(next.certificate),
            previousSerial: previous.serialNumber,
          },
          `TLS files changed: new connections use certificate ${next.certificate.serialNumber} (valid to ${next.certificate.validTo}); open connections stay`,
        );
        return true;
      } catch (error) {
        return this.refuse(digest, error as Error);
      }
    }
    this.warnIfExpired(now);
    return false;
  }

  private refuse(key: string, error: Error): false {
    if (key !== this.refusedDigest) {
      this.refusedDigest = key;
      this.logger.warn(
        { event: 'wire.tls.reload-refused', reason: error.message },
        `TLS files changed but were not loaded, keeping certificate ${this.material.certificate.serialNumber}: ${error.message}`,
      );
    }
    return false;
  }

  /** Once per certificate: peers refuse every new connection from a node whose certificate expired. */
  private warnIfExpired(now: number): void {
    const c = this.material.certificate;
    if (this.expiryLogged || now <= Date.parse(c.validTo)) return;
    this.expiryLogged = true;
    this.logger.error(
      { event: 'wire.tls.expired', certificate: describeCertificate(c) },
      `this node's TLS certificate expired on ${c.validTo}: peers will refuse new connections until ${this.config.certFile} is renewed`,
    );
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      void this.check().finally(() => this.schedule());
    }, this.config.reloadIntervalMs ?? DEFAULT_TLS_RELOAD_INTERVAL_MS);
    this.timer.unref();
  }
}
