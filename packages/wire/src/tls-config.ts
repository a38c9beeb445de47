/**
 * Mutual TLS between nodes: every connection is `wss`, and both ends present a certificate that
 * must chain to `caFile`. Files are PEM; they are re-read every `reloadIntervalMs` and swapped in
 * for new connections when they change (certificate rotation), open connections stay as they are.
 */
export interface WireTlsConfig {
  /** The cluster CA (one or more PEM certificates): the only issuer whose node certificates are accepted. */
  readonly caFile: string;
  /** This node's certificate (PEM), optionally followed by intermediates; both serverAuth and clientAuth use. */
  readonly certFile: string;
  /** Its private key (unencrypted PEM). */
  readonly keyFile: string;
  /**
   * Also check that a dialled peer's certificate names the host it was dialled at (off by default:
   * members are usually addressed by pod IP; the CA is the trust anchor and the HMAC handshake binds identity).
   */
  readonly verifyHostname?: boolean;
  /**
   * Bind each certificate to its node: a peer's certificate must name (SAN) the host its hello
   * claims, and a dialled peer's the address it was dialled at (as `verifyHostname`). Without it
   * any certificate of the cluster CA may claim any host (the identity keys still bind members).
   */
  readonly bindIdentity?: boolean;
  /** How often the three files are re-read to detect a rotation (default 10 s). */
  readonly reloadIntervalMs?: number;
}
