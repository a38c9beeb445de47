/** A TLS failure as an operator reads it in a log line: OpenSSL's code and what it means here. */
export interface TlsFailure {
  readonly code: string;
  readonly reason: string;
}

const NOT_OUR_CA = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
]);
const NOT_TLS = new Set([
  'ERR_SSL_WRONG_VERSION_NUMBER',
  'ERR_SSL_PACKET_LENGTH_TOO_LONG',
  'ERR_SSL_HTTP_REQUEST',
]);

/**
 * What went wrong when this node dialled a peer over TLS, or undefined when the error is not about
 * TLS (connection refused, unreachable host: the association just retries, as without TLS).
 */
export function dialTlsFailure(error: Error & { code?: string }): TlsFailure | undefined {
  const code = error.code ?? '';
  if (code === 'ECONNRESET') {
    // Node refuses a client certificate by closing the connection, without a TLS alert.
    return {
      code,
      reason:
        'the peer closed the connection during or right after the TLS handshake: it probably refused ' +
        "this node's certificate (expired, or not from its CA); see wire.tls.rejected in the peer's log",
    };
  }
  const verdict = certificateVerdict(code);
  if (verdict) return { code, reason: `the peer's certificate was refused: ${verdict}` };
  if (NOT_TLS.has(code))
    return { code, reason: 'the peer does not speak TLS (is it running without wire.tls?)' };
  if (code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_')) {
    return { code, reason: `TLS handshake failed: ${firstLine(error.message)}` };
  }
  return undefined;
}

/** Why the accepting side refused a connection at the TLS layer (`tlsClientError`). */
export function acceptTlsFailure(error: Error & { code?: string }): TlsFailure {
  const code = error.code ?? 'TLS_ERROR';
  if (NOT_TLS.has(code)) return { code, reason: 'the client does not speak TLS (a node without wire.tls?)' };
  if (code === 'ECONNRESET') {
    return {
      code,
      reason: "the client hung up during the TLS handshake (it may not trust this node's certificate)",
    };
  }
  return { code, reason: `TLS handshake failed: ${firstLine(error.message)}` };
}

/** Why a client certificate that completed the handshake is not authorized (OpenSSL verify code). */
export function certificateVerdict(code: string): string | undefined {
  if (code === 'CERT_HAS_EXPIRED') return 'the certificate has expired';
  if (code === 'CERT_NOT_YET_VALID') return 'the certificate is not yet valid';
  if (NOT_OUR_CA.has(code)) return 'the certificate is not signed by the cluster CA';
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID')
    return 'the certificate does not name the host it was dialled at';
  if (code === 'CERT_REVOKED') return 'the certificate is revoked';
  if (code === 'INVALID_PURPOSE') return 'the certificate is not for TLS client and server use';
  return undefined;
}

function firstLine(message: string): string {
  return message.split('\n')[0]!.slice(0, 200);
}
