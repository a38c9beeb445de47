import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  sign,
  verify,
} from 'node:crypto';
import { InvalidConfigError, isPublicKeyText } from '@doyen/core';

/**
 * The key pair of one node incarnation (Ed25519). The cluster secret is shared, so it proves only
 * that a peer belongs to the cluster; this key proves *which* member it is: every handshake is
 * signed with it, the coordinator admits its public key with the member, and every later
 * connection claiming that member must sign with the same key. Kept in memory (a new identity per
 * process) unless the node is given a PEM file for a stable one.
 */
export class NodeIdentity {
  /** The raw 32-byte public key, base64url (43 characters): how members carry it. */
  readonly publicKey: string;

  private constructor(private readonly privateKey: KeyObject) {
    const jwk = createPublicKey(privateKey).export({ format: 'jwk' });
    this.publicKey = jwk.x as string;
  }

  static generate(): NodeIdentity {
    return new NodeIdentity(generateKeyPairSync('ed25519').privateKey);
  }

  /** From an unencrypted PKCS#8 PEM; InvalidConfigError if it is not an Ed25519 private key. */
  static fromPem(pem: string, source = 'the identity key'): NodeIdentity {
    let key: KeyObject;
    try {
      key = createPrivateKey({ key: pem, format: 'pem' });
    } catch (error) {
      throw new InvalidConfigError(`${source} is not a PEM private key: ${(error as Error).message}`);
    }
    if (key.asymmetricKeyType !== 'ed25519')
      throw new InvalidConfigError(`${source} must be an Ed25519 key, not ${key.asymmetricKeyType}`);
    return new NodeIdentity(key);
  }

  /** PKCS#8 PEM of the private key, to keep a stable identity on disk. */
  toPem(): string {
    return this.privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;
  }

  sign(data: Buffer): Buffer {
    return sign(null, data, this.privateKey);
  }
}

export const SIGNATURE_BYTES = 64;
export const PUBLIC_KEY_BYTES = 32;

/** Public keys seen in handshakes: few (one per member), each parsed once. */
const parsed = new Map<string, KeyObject>();
const PARSED_MAX = 4096;

/** Whether `signature` is `publicKey`'s Ed25519 signature of `data`; false for any malformed input. */
export function verifyNodeSignature(publicKey: string, data: Buffer, signature: Buffer): boolean {
  if (!isPublicKeyText(publicKey) || signature.length !== SIGNATURE_BYTES) return false;
  let key = parsed.get(publicKey);
  if (!key) {
    try {
      key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: publicKey }, format: 'jwk' });
    } catch {
      return false;
    }
    if (parsed.size >= PARSED_MAX) parsed.clear();
    parsed.set(publicKey, key);
  }
  try {
    return verify(null, data, key, signature);
  } catch {
    return false;
  }
}

/** The base64url text of a raw public key from the wire (32 bytes). */
export function publicKeyText(raw: Uint8Array): string {
  return Buffer.from(raw).toString('base64url');
}

/** The raw 32 bytes of a public key's text (for the handshake frames). */
export function publicKeyBytes(text: string): Buffer {
  return Buffer.from(text, 'base64url');
}
