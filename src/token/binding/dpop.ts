/**
 * DPoP (RFC 9449) at the resource server: what a token policy with `dpop` on checks of a request
 * after its token was validated. The one call is {@link DpopGuard.check}: a token bound to a key
 * (`cnf.jkt`) passes only under the `DPoP` scheme with a proof of that key; the proof is checked
 * as sections 4.3 and 7.1 ask (one `DPoP` header, one well-formed JWT, `typ`, `alg`, the signature
 * by its `jwk`, no private key, `htm`, `htu` against `publicBaseUrl`, `iat`, `ath`, the nonce,
 * the `jti` once).
 *
 * @module
 */
import { createPublicKey, hash, verify, type JsonWebKey, type KeyObject } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { calculateJwkThumbprint, decodeProtectedHeader, importJWK, jwtVerify, type JWK } from 'jose';
import type { DpopRefusalReason, TokenContext } from '../../context.js';
import { GatewayError, type DpopChallenge } from '../../errors.js';
import { DpopNonces } from './nonce.js';
import { MemoryReplayStore, type DpopReplayStore } from './replay.js';

/** A token policy's DPoP settings, checked, defaults applied.  @internal */
export interface DpopSettings {
  readonly mode: 'allowed' | 'required';
  readonly algorithms: readonly string[];
  readonly maxAgeSeconds: number;
  /** Most proofs of one key remembered within their lifetime (`dpopMaxProofsPerKey`). */
  readonly maxProofsPerKey: number;
  readonly nonce: boolean;
  readonly publicBaseUrl: URL;
  readonly replay: DpopReplayStore | undefined;
}

/** Longest `DPoP` header value read, in characters: a proof with an RSA-4096 `jwk` fits in well under half. */
export const MAX_PROOF_LENGTH = 8192;

export type { DpopRefusalReason };

/** The claims of a validation the binding is read from. */
interface ValidatedClaims {
  readonly jwt?: Readonly<Record<string, unknown>>;
  readonly introspection?: Readonly<Record<string, unknown>>;
}

const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];
const BASE64URL = /^[A-Za-z0-9_-]+$/;
/** Proof headers kept, read and imported (a client signs many proofs with one key). */
const MAX_KEYS = 1024;

/**
 * The algorithms whose signature is checked with node:crypto's `verify` on the key jose imported:
 * ECDSA (the JWS signature is r || s, IEEE P1363) and EdDSA. WebCrypto's asynchronous verify, which
 * jose uses, costs half again as much CPU per proof; the other algorithms go through jose.
 */
const DIRECT_VERIFY: Readonly<Record<string, string | null>> = {
  ES256: 'sha256',
  ES384: 'sha384',
  ES512: 'sha512',
  EdDSA: null,
  Ed25519: null,
};

/** A proof header read and checked, with its key. */
interface ProofHeader {
  readonly alg: string;
  /** The key as jose imported it. */
  readonly key: Awaited<ReturnType<typeof importJWK>>;
  readonly thumbprint: string;
  /** For the algorithms of {@link DIRECT_VERIFY}: the digest (`null` for EdDSA) and the key as node:crypto holds it. */
  readonly fast: { readonly hash: string | null; readonly key: KeyObject } | undefined;
}

/** A refusal of the checks, with its reason. */
class Refusal extends GatewayError {
  readonly reason: DpopRefusalReason;
  constructor(
    code: 'ERR_DPOP_PROOF_INVALID' | 'ERR_TOKEN_INVALID' | 'ERR_DPOP_NONCE_REQUIRED',
    reason: DpopRefusalReason,
    realm: string,
    diagnostic: string,
  ) {
    super(code, { realm, diagnostic: `dpop: ${diagnostic}` });
    this.reason = reason;
  }
}

/** The reason of a refusal of the DPoP checks, if the error is one. */
export function dpopRefusalReason(err: unknown): DpopRefusalReason | undefined {
  return err instanceof Refusal ? err.reason : undefined;
}

/** `cnf.jkt` of a claims set, `undefined` without one; `null` when `cnf` is there but malformed. */
function jktOf(claims: Readonly<Record<string, unknown>> | undefined): string | undefined | null {
  const cnf = claims?.['cnf'];
  if (cnf === undefined) return undefined;
  if (cnf === null || typeof cnf !== 'object') return null;
  const jkt = (cnf as Record<string, unknown>)['jkt'];
  if (jkt === undefined) return undefined;
  return typeof jkt === 'string' && jkt.length === 43 && BASE64URL.test(jkt) ? jkt : null;
}

/**
 * The refusal of a DPoP-bound token (`cnf.jkt`) sent as Bearer to a policy that enforces bindings
 * (`certificateBoundTokens: 'enforce'`), with DPoP on or `off`.  @internal
 */
export function boundBearerRefusal(realm: string, dpopOff: boolean): GatewayError {
  return new Refusal(
    'ERR_TOKEN_INVALID',
    'bearer_for_bound_token',
    realm,
    dpopOff ? 'a DPoP-bound token (cnf.jkt) and DPoP is off for this policy' : 'a DPoP-bound token (cnf.jkt) sent under the Bearer scheme',
  );
}

/**
 * The key a validated token is bound to (`cnf.jkt` of the JWT or of the introspection answer),
 * `undefined` when it is not DPoP-bound. Throws `ERR_TOKEN_INVALID` when the two disagree, when
 * `cnf.jkt` is malformed, or when the introspection answer's `token_type` (if any) is not `DPoP`
 * for a bound token.  @internal
 */
export function boundKey(validation: ValidatedClaims, realm: string): string | undefined {
  const fromJwt = jktOf(validation.jwt);
  const fromIntrospection = jktOf(validation.introspection);
  const refuse = (diagnostic: string): never => {
    throw new Refusal('ERR_TOKEN_INVALID', 'unbound_token', realm, diagnostic);
  };
  if (fromJwt === null || fromIntrospection === null) refuse('cnf.jkt is not a SHA-256 JWK thumbprint');
  if (fromJwt !== undefined && fromIntrospection !== undefined && fromJwt !== fromIntrospection)
    refuse('the JWT and the introspection answer name different keys (cnf.jkt)');
  const jkt = fromIntrospection ?? fromJwt;
  const tokenType = validation.introspection?.['token_type'];
  if (jkt !== undefined && tokenType !== undefined && (typeof tokenType !== 'string' || tokenType.toLowerCase() !== 'dpop'))
    refuse('the introspection answer binds the token to a key (cnf.jkt) but its token_type is not DPoP');
  return jkt ?? undefined;
}

/** The DPoP checks of one token policy. */
export class DpopGuard {
  readonly #settings: DpopSettings;
  readonly #realm: string;
  readonly #clockSkew: number;
  readonly #replay: DpopReplayStore;
  readonly #nonces: DpopNonces | undefined;
  /** Proof headers read, by their encoded text: the same key's proofs share it. */
  readonly #headers = new Map<string, ProofHeader>();
  readonly #algorithms: ReadonlySet<string>;
  /** The base URL's origin and path, without a trailing `/`. */
  readonly #base: string;

  constructor(settings: DpopSettings, realm: string, clockSkew: number, secret: string | undefined) {
    this.#settings = settings;
    this.#realm = realm;
    this.#clockSkew = clockSkew;
    this.#replay = settings.replay ?? new MemoryReplayStore();
    this.#nonces = settings.nonce ? new DpopNonces(secret, `${realm}|${settings.publicBaseUrl.href}`, settings.maxAgeSeconds) : undefined;
    this.#algorithms = new Set(settings.algorithms);
    const { origin, pathname } = settings.publicBaseUrl;
    this.#base = origin + pathname.replace(/\/+$/, '');
  }

  /** The JWS algorithms a proof may be signed with (option `dpopSigningAlgs`). */
  get algorithms(): readonly string[] {
    return this.#settings.algorithms;
  }

  /** Whether Bearer tokens (unbound ones) are accepted too. */
  get acceptsBearer(): boolean {
    return this.#settings.mode === 'allowed';
  }

  /** The DPoP challenge of an error for a request sent under `scheme`. */
  challenge(scheme: 'Bearer' | 'DPoP' | undefined, nonce: boolean): DpopChallenge {
    const bearer = this.acceptsBearer;
    return {
      algs: this.#settings.algorithms,
      errorInDpop: scheme === 'DPoP' || !bearer,
      bearer,
      ...(nonce && this.#nonces !== undefined ? { nonce: this.#nonces.current() } : {}),
    };
  }

  /**
   * Checks the request's binding after its token was validated, and sets `token.binding` when it
   * is DPoP-bound. Returns `undefined` when nothing is left to check (an unbound Bearer token the
   * policy accepts), or the promise of the proof's checks; throws (or rejects with) the refusal.
   */
  check(req: IncomingMessage, token: TokenContext, validation: ValidatedClaims): Promise<void> | undefined {
    const jkt = boundKey(validation, this.#realm);
    if (token.scheme !== 'DPoP') {
      if (jkt !== undefined)
        throw new Refusal(
          'ERR_TOKEN_INVALID',
          'bearer_for_bound_token',
          this.#realm,
          'a DPoP-bound token (cnf.jkt) sent under the Bearer scheme',
        );
      if (!this.acceptsBearer)
        throw new Refusal('ERR_TOKEN_INVALID', 'bearer_refused', this.#realm, 'the policy requires DPoP (dpop: required)');
      return undefined;
    }
    if (jkt === undefined)
      throw new Refusal(
        'ERR_TOKEN_INVALID',
        'unbound_token',
        this.#realm,
        'a token bound to no key (no cnf.jkt) sent under the DPoP scheme',
      );
    return this.#verify(req, token, jkt);
  }

  async #verify(req: IncomingMessage, token: TokenContext, jkt: string): Promise<void> {
    const proof = this.#proofOf(req);
    const { payload, thumbprint } = await this.#verified(proof);
    this.#checkClaims(req, payload, token.raw);
    if (thumbprint !== jkt) this.#refuse('key_mismatch', 'the proof is signed by a key other than the one the token is bound to (cnf.jkt)');
    const ttlMs = (this.#settings.maxAgeSeconds + 2 * this.#clockSkew) * 1000;
    const key = hash('sha256', `${thumbprint}\n${payload['jti'] as string}`, 'base64url');
    const fresh = await this.#replay.remember(key, ttlMs, { thumbprint, maxProofs: this.#settings.maxProofsPerKey });
    if (fresh === 'overShare')
      throw new GatewayError('ERR_RATE_LIMITED', {
        retryAfter: Math.ceil(ttlMs / 1000),
        diagnostic: `dpop: this key has ${this.#settings.maxProofsPerKey} proofs within their lifetime (dpopMaxProofsPerKey); its proofs are refused until some expire`,
      });
    if (fresh === undefined)
      throw new GatewayError('ERR_PROOF_STORE_UNAVAILABLE', {
        realm: this.#realm,
        diagnostic: `dpop: the store of proof identifiers (jti) did not answer${this.#replay.unavailable === undefined ? '' : ` (${this.#replay.unavailable})`}`,
      });
    if (!fresh) this.#refuse('replayed', 'the proof was used before (its jti is known)');
    token.binding = { kind: 'jkt', thumbprint: jkt, result: 'verified' };
  }

  #refuse(reason: DpopRefusalReason, diagnostic: string): never {
    throw new Refusal('ERR_DPOP_PROOF_INVALID', reason, this.#realm, diagnostic);
  }

  /** The one `DPoP` header's value. */
  #proofOf(req: IncomingMessage): string {
    const raw = req.rawHeaders;
    let proof: string | undefined;
    let count = 0;
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const name = raw[i]!;
      if (name.length !== 4 || name.toLowerCase() !== 'dpop') continue;
      count++;
      proof = raw[i + 1]!;
    }
    if (count === 0) this.#refuse('missing_proof', 'no DPoP header');
    if (count > 1) this.#refuse('malformed_proof', `${count} DPoP headers in one request`);
    const value = proof!.trim();
    if (value.length > MAX_PROOF_LENGTH) this.#refuse('malformed_proof', `DPoP header longer than ${MAX_PROOF_LENGTH} characters`);
    const parts = value.split('.');
    if (parts.length !== 3 || parts.some((part) => part === '' || !BASE64URL.test(part)))
      this.#refuse('malformed_proof', 'the DPoP header is not a compact JWS (three base64url parts)');
    return value;
  }

  /** The proof's header checked, its signature verified with its `jwk`: its claims and the key's thumbprint. */
  async #verified(proof: string): Promise<{ payload: Record<string, unknown>; thumbprint: string }> {
    const first = proof.indexOf('.');
    const second = proof.indexOf('.', first + 1);
    const headerPart = proof.slice(0, first);
    // A client signs many proofs with one key: its header is read, checked and imported once.
    let header = this.#headers.get(headerPart);
    if (header === undefined) {
      header = await this.#readHeader(proof);
      if (this.#headers.size >= MAX_KEYS) this.#headers.clear();
      this.#headers.set(headerPart, header);
    }
    const { thumbprint, fast } = header;
    if (fast === undefined) return { payload: await this.#verifiedByJose(proof, header), thumbprint };
    let valid = false;
    try {
      valid = verify(
        fast.hash,
        Buffer.from(proof.slice(0, second)),
        { key: fast.key, dsaEncoding: 'ieee-p1363' },
        Buffer.from(proof.slice(second + 1), 'base64url'),
      );
    } catch {
      // A signature of the wrong length: said below.
    }
    if (!valid) this.#refuse('bad_signature', 'the signature does not verify with the jwk header');
    let payload: unknown;
    try {
      payload = JSON.parse(Buffer.from(proof.slice(first + 1, second), 'base64url').toString('utf8'));
    } catch {
      // Said below.
    }
    if (payload === null || typeof payload !== 'object' || Array.isArray(payload))
      this.#refuse('malformed_proof', 'the proof is not a valid JWT (its claims are not a JSON object)');
    return { payload: payload as Record<string, unknown>, thumbprint };
  }

  /** A proof whose algorithm has no direct verification here, verified by jose with its checks of a JWT. */
  async #verifiedByJose(proof: string, header: ProofHeader): Promise<Record<string, unknown>> {
    try {
      const { payload } = await jwtVerify(proof, header.key, {
        algorithms: [header.alg],
        typ: 'dpop+jwt',
        clockTolerance: this.#clockSkew,
      });
      return payload as Record<string, unknown>;
    } catch (err) {
      const code = err instanceof Error && 'code' in err ? String(err.code) : '';
      if (code === 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED')
        this.#refuse('bad_signature', 'the signature does not verify with the jwk header');
      this.#refuse('malformed_proof', `the proof is not a valid JWT (${code || 'unreadable'})`);
    }
  }

  /** The proof's protected header checked (`typ`, `alg`, a public `jwk`), its key imported by jose, its thumbprint. */
  async #readHeader(proof: string): Promise<ProofHeader> {
    let header: ReturnType<typeof decodeProtectedHeader>;
    try {
      header = decodeProtectedHeader(proof);
    } catch {
      this.#refuse('malformed_proof', 'the proof header is not a JSON object');
    }
    if (typeof header.typ !== 'string' || header.typ.toLowerCase() !== 'dpop+jwt') this.#refuse('bad_header', 'typ is not dpop+jwt');
    const alg = header.alg;
    if (typeof alg !== 'string' || !this.#algorithms.has(alg))
      this.#refuse('bad_header', `alg is not one of ${this.#settings.algorithms.join(', ')}`);
    const jwk = header.jwk as JWK | undefined;
    if (jwk === undefined || jwk === null || typeof jwk !== 'object' || Array.isArray(jwk) || typeof jwk.kty !== 'string')
      this.#refuse('bad_header', 'no jwk header holding a public key');
    if (PRIVATE_MEMBERS.some((member) => Object.hasOwn(jwk, member)))
      this.#refuse('bad_header', 'the jwk header holds a private or symmetric key');
    try {
      // jose checks that the key is one for `alg` (its type, its curve).
      const key = await importJWK({ ...jwk, ext: true }, alg);
      const thumbprint = await calculateJwkThumbprint(jwk, 'sha256');
      const hash = DIRECT_VERIFY[alg];
      const fast = hash === undefined ? undefined : { hash, key: createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' }) };
      return { alg, key, thumbprint, fast };
    } catch {
      this.#refuse('bad_header', `the jwk header is not a public key usable with ${alg}`);
    }
  }

  /** `jti`, `htm`, `htu`, `iat`, `ath` and the nonce. */
  #checkClaims(req: IncomingMessage, payload: Record<string, unknown>, token: string): void {
    const { jti, htm, htu, iat, ath } = payload;
    if (typeof jti !== 'string' || jti === '' || jti.length > 256) this.#refuse('bad_claims', 'jti is not a string of 1 to 256 characters');
    if (typeof htm !== 'string' || htm !== req.method) this.#refuse('htm', 'htm is not the request method');
    if (typeof htu !== 'string' || !this.#sameUri(htu, req)) this.#refuse('htu', 'htu is not the URI of the request at publicBaseUrl');
    const now = Date.now() / 1000;
    if (typeof iat !== 'number' || !Number.isFinite(iat)) this.#refuse('iat', 'iat is not a number');
    if (iat > now + this.#clockSkew) this.#refuse('iat', 'iat is in the future');
    if (now - iat > this.#settings.maxAgeSeconds + this.#clockSkew)
      this.#refuse('iat', `the proof is older than ${this.#settings.maxAgeSeconds} s (dpopProofMaxAgeSeconds)`);
    // RFC 9449 section 4.2: base64url(SHA-256(ASCII token)); a token is visible ASCII (b64token).
    if (typeof ath !== 'string' || ath !== hash('sha256', token, 'base64url'))
      this.#refuse('ath', 'ath is not the hash of the access token');
    if (this.#nonces !== undefined && !this.#nonces.accepts(payload['nonce'])) {
      throw new Refusal(
        'ERR_DPOP_NONCE_REQUIRED',
        'nonce',
        this.#realm,
        payload['nonce'] === undefined ? 'the proof has no nonce' : 'the proof nonce is not a current one',
      );
    }
  }

  /** Whether `htu` is the request's URI at the public base URL, query and fragment aside (RFC 9449 section 4.3, item 9). */
  #sameUri(htu: string, req: IncomingMessage): boolean {
    const target = (req as IncomingMessage & { originalUrl?: string }).originalUrl ?? req.url ?? '/';
    const question = target.indexOf('?');
    const path = question === -1 ? target : target.slice(0, question);
    const expectedText = this.#base + (path.startsWith('/') ? path : `/${path}`);
    // The usual proof names the URI exactly as the gateway would: no parsing.
    const end = htu.search(/[?#]/);
    if ((end === -1 ? htu : htu.slice(0, end)) === expectedText) return true;
    // Otherwise compared as URLs (RFC 3986 normalization: case of scheme and host, default port, dot segments).
    let given: URL;
    let expected: URL;
    try {
      given = new URL(htu);
      expected = new URL(expectedText);
    } catch {
      return false;
    }
    return given.origin === expected.origin && given.pathname === expected.pathname && given.username === '' && given.password === '';
  }
}
