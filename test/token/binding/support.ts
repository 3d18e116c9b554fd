/**
 * What a DPoP client does, for the tests: a key pair, and proofs (RFC 9449 section 4.2) made as a
 * client makes them, or broken one way at a time.
 */
import { createHash, randomUUID } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';

/** A client's DPoP key. */
export interface DpopKey {
  readonly privateKey: CryptoKey;
  readonly publicJwk: JWK;
  readonly alg: string;
  /** Its JWK SHA-256 thumbprint: the `cnf.jkt` of the tokens bound to it. */
  readonly jkt: string;
}

export async function dpopKey(alg = 'ES256'): Promise<DpopKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const publicJwk = await exportJWK(publicKey);
  return { privateKey, publicJwk, alg, jkt: await calculateJwkThumbprint(publicJwk, 'sha256') };
}

/** `ath`: the access token's SHA-256, base64url. */
export function ath(token: string): string {
  return createHash('sha256').update(token, 'ascii').digest('base64url');
}

/** What a proof says, and how its header is made (each overridable to break it). */
export interface ProofParts {
  method: string;
  url: string;
  token?: string;
  nonce?: string;
  /** Claims over (or, set to `undefined`, without) the usual ones. */
  claims?: JWTPayload;
  /** Header members over the usual ones (`typ`, `alg`, `jwk`). */
  header?: Record<string, unknown>;
  /** Signs with this key instead (the header's `jwk` stays the proof key's). */
  signWith?: DpopKey;
}

/** A proof by `key` for a request. */
export async function proof(key: DpopKey, parts: ProofParts): Promise<string> {
  const claims: JWTPayload = {
    jti: randomUUID(),
    htm: parts.method,
    htu: parts.url,
    iat: Math.floor(Date.now() / 1000),
    ...(parts.token === undefined ? {} : { ath: ath(parts.token) }),
    ...(parts.nonce === undefined ? {} : { nonce: parts.nonce }),
    ...parts.claims,
  };
  for (const [name, value] of Object.entries(claims)) if (value === undefined) delete claims[name];
  const signer = parts.signWith ?? key;
  return new SignJWT(claims)
    .setProtectedHeader({ typ: 'dpop+jwt', alg: signer.alg, jwk: key.publicJwk, ...parts.header } as never)
    .sign(signer.privateKey);
}

/** A compact JWS made of these parts as they are (any JSON, any signature). */
export function rawJws(header: unknown, payload: unknown, signature = 'c2ln'): string {
  const part = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
  return `${part(header)}.${part(payload)}.${signature}`;
}
