/**
 * DPoP nonces issued by the gateway (RFC 9449 section 9): stateless, an HMAC of the time window
 * they were issued in. A nonce is accepted during its window and the next one. The key is derived
 * from the token policy's client secret when it has one, so that every instance running the same
 * configuration accepts the nonces of the others; otherwise it is this process's own.
 *
 * @module
 */
import { createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';

/** The nonces of one token policy. */
export class DpopNonces {
  readonly #key: Buffer;
  readonly #windowMs: number;
  #window = -1;
  #current = '';

  /**
   * @param secret - the policy's client secret, if any (the key is derived from it, never it).
   * @param scope - the policy's name and settings, so that two policies' nonces differ.
   */
  constructor(secret: string | undefined, scope: string, windowSeconds: number) {
    this.#key =
      secret === undefined
        ? randomBytes(32)
        : Buffer.from(hkdfSync('sha256', Buffer.from(secret, 'utf8'), Buffer.from(scope, 'utf8'), 'gateway dpop nonce', 32));
    this.#windowMs = Math.max(1000, windowSeconds * 1000);
  }

  #mac(window: number): string {
    return createHmac('sha256', this.#key).update(String(window)).digest('base64url').slice(0, 22);
  }

  /** The nonce to give now. */
  current(): string {
    const window = Math.floor(Date.now() / this.#windowMs);
    if (window !== this.#window) {
      this.#window = window;
      this.#current = `${window.toString(36)}.${this.#mac(window)}`;
    }
    return this.#current;
  }

  /** Whether a proof's `nonce` is one of ours, of this window or the previous one. */
  accepts(nonce: unknown): boolean {
    if (typeof nonce !== 'string' || nonce.length > 64) return false;
    const dot = nonce.indexOf('.');
    if (dot <= 0) return false;
    const window = Number.parseInt(nonce.slice(0, dot), 36);
    const now = Math.floor(Date.now() / this.#windowMs);
    if (!Number.isSafeInteger(window) || window.toString(36) !== nonce.slice(0, dot) || window > now || window < now - 1) return false;
    const given = Buffer.from(nonce.slice(dot + 1));
    const expected = Buffer.from(this.#mac(window));
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}
