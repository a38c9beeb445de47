// A raw TLS client (no ws) that asks a node which certificate it serves.
import { readFileSync } from 'node:fs';
import { type ConnectionOptions, connect as tlsConnect } from 'node:tls';
import type { IssuedCertificate } from './certificates.js';

/**
 * The serial of the certificate served on 127.0.0.1:`port` to a new connection presenting `client`
 * and trusting the CA in `caFile`.
 */
export function servedSerial(
  port: number,
  caFile: string,
  client: IssuedCertificate,
  options: Pick<ConnectionOptions, 'checkServerIdentity'> = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({
      host: '127.0.0.1',
      port,
      ca: readFileSync(caFile),
      cert: readFileSync(client.certFile),
      key: readFileSync(client.keyFile),
      ...options,
    });
    socket.once('secureConnect', () => {
      resolve(socket.getPeerCertificate().serialNumber);
      socket.destroy();
    });
    socket.once('error', reject);
  });
}
