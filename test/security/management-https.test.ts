import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { nodesClosedAfterEach, startLocalNode } from '../support/doyen-nodes.js';

const haveOpenssl = (() => {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
if (!haveOpenssl) console.warn('[management https test] skipped: no openssl to make a certificate');

const nodes = nodesClosedAfterEach();

/** A self-signed certificate for 127.0.0.1, made for this run. */
function certificate(): { certFile: string; keyFile: string; cert: Buffer } {
  const dir = mkdtempSync(join(tmpdir(), 'doyen-https-'));
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  return { certFile, keyFile, cert: readFileSync(certFile) };
}

function httpsRequest(
  port: number,
  path: string,
  ca: Buffer,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method: options.method ?? 'GET', headers: options.headers, ca },
      (res) => {
        let body = '';
        res.on('data', (d) => (body += String(d)));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

describe.skipIf(!haveOpenssl)('management over HTTPS (--http-tls-cert, --http-tls-key)', () => {
  it('serves HTTPS with the given certificate; its own https origins are the allowed ones', async () => {
    const { certFile, keyFile, cert } = certificate();
    const token = randomBytes(16).toString('hex');
    const { node, httpPort: h } = await startLocalNode(
      { cluster: 'mgmt-https', httpToken: token, httpTls: { certFile, keyFile } },
      {},
      nodes,
    );
    expect(node.http!.scheme).toBe('https');
    const alive = await httpsRequest(h!, '/health/alive', cert);
    expect(alive).toMatchObject({ status: 200 });
    expect(JSON.parse(alive.body)).toEqual({ alive: true });
    // plain HTTP gets no answer from a TLS port
    await expect(fetch(`http://127.0.0.1:${h}/health/alive`)).rejects.toThrow();
    expect(node.http!.allowsOrigin(`https://127.0.0.1:${h}`)).toBe(true);
    expect(node.http!.allowsOrigin(`http://127.0.0.1:${h}`)).toBe(false);
    // the guard holds over TLS as well: a cross-site form post is refused, the operator leaves
    const attack = await httpsRequest(h!, '/cluster/leave', cert, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', origin: 'https://evil.example' },
      body: 'x',
    });
    expect(attack.status).toBe(403);
    const leave = await httpsRequest(h!, '/cluster/leave', cert, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(leave.status).toBe(202);
    expect(await node.closed).toBe('shutdown');
  });

  it('refuses to start when the certificate cannot be read, before anything is bound', async () => {
    await expect(
      startLocalNode({
        cluster: 'mgmt-https',
        secret: 's',
        httpTls: { certFile: '/nonexistent/cert.pem', keyFile: '/nonexistent/key.pem' },
      }),
    ).rejects.toThrow(/cannot read the management certificate/);
  });
});
