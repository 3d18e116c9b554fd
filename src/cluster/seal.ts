/**
 * What the instances share through Redis, sealed with the cluster secret. Any client of that Redis
 * can write any key and publish on any channel (Redis often runs without a password, on a network
 * many hosts reach): nothing it writes may make a token valid, reset an instance, sign an operator
 * out or add a node to the list. Every instance is given the secret; an entry or message that does
 * not verify is ignored, counted by kind ({@link ClusterSeal.rejected}) and logged, never parsed.
 *
 * A sealed text is `v1.<until>.<mac>.<payload>`:
 *
 * - `v1`: the format, so that it can change;
 * - `until`: epoch ms after which it is void (a copy kept and written back later is refused);
 * - `mac`: HMAC-SHA256, base64url, of the place it was written to (its Redis key or channel),
 *   `until` and the payload, under a key derived from the secret for its kind alone (HKDF-SHA256,
 *   one label per kind): an entry verifies only where it was written, as the kind it was written
 *   as, so a valid result copied under another token's key, or a reset report replayed as a reset,
 *   is refused.
 *
 * Several secrets may be given (a rotation): the first seals, every one opens.
 *
 * @module
 */
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import type { OptionChecks } from '../options.js';
import { log } from './log.js';

/** What the instances share, by kind: the label of `gateway_cluster_messages_rejected_total`. */
export type ClusterMessageKind = 'token_result' | 'reset' | 'reset_report' | 'sign_out' | 'registry';

/** Every kind, in a fixed order. @internal */
export const CLUSTER_MESSAGE_KINDS: readonly ClusterMessageKind[] = ['token_result', 'reset', 'reset_report', 'sign_out', 'registry'];

/** Fewest characters of a cluster secret (a 32-byte random value is 43 in base64url). */
export const MIN_CLUSTER_SECRET_LENGTH = 32;

/** Most secrets at once (a rotation needs two). */
const MAX_SECRETS = 4;

/**
 * Longest sealed text, bytes: a larger one is refused unread (a token result is a few hundred bytes;
 * what a forger writes must not cost an instance more than this). @internal
 */
export const MAX_SEALED_BYTES = 1_048_576;

const VERSION = 'v1.';
const MAC_LENGTH = 43;
// `v1.`, until (1 to 15 digits), `.`, 43 base64url characters, `.`, then the payload.
const SEALED = /^v1\.([0-9]{1,15})\.([A-Za-z0-9_-]{43})\./;
const SALT = 'express-access-gateway cluster seal';

/** What {@link ClusterSeal.open} gives of a text that verified. @internal */
export interface Opened {
  /** The payload as sealed. */
  readonly payload: string;
  /** Epoch ms after which the text is void. */
  readonly until: number;
}

/**
 * The checked secrets of an option (`string` or a list, first one sealing). Throws the option's
 * error; the message never repeats a secret.  @internal
 */
export function clusterSecrets(check: OptionChecks, value: unknown, path: string): string[] {
  const list: unknown[] = typeof value === 'string' ? [value] : Array.isArray(value) ? value : [];
  if (list.length === 0 || list.length > MAX_SECRETS)
    check.fail(
      path,
      `must be a string of at least ${MIN_CLUSTER_SECRET_LENGTH} characters, or a list of 1 to ${MAX_SECRETS} of them (the first signs)`,
    );
  list.forEach((secret, i) => {
    if (typeof secret !== 'string' || secret.length < MIN_CLUSTER_SECRET_LENGTH) {
      check.fail(
        typeof value === 'string' ? path : `${path}[${i}]`,
        `must be a string of at least ${MIN_CLUSTER_SECRET_LENGTH} characters (for example: openssl rand -base64 32)`,
      );
    }
  });
  return list as string[];
}

function deriveKey(secret: string, kind: ClusterMessageKind): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, SALT, `express-access-gateway cluster ${kind}`, 32));
}

/** Seals and opens what the instances share (see the module comment). @internal */
export class ClusterSeal {
  readonly #keys: ReadonlyMap<ClusterMessageKind, readonly Buffer[]>;
  readonly #rejected = Object.fromEntries(CLUSTER_MESSAGE_KINDS.map((kind) => [kind, 0])) as Record<ClusterMessageKind, number>;

  /** @param secrets - checked by {@link clusterSecrets}; the first seals. */
  constructor(secrets: readonly string[]) {
    this.#keys = new Map(CLUSTER_MESSAGE_KINDS.map((kind) => [kind, secrets.map((secret) => deriveKey(secret, kind))]));
  }

  /** Texts refused since creation, by kind (a copy). */
  get rejected(): Record<ClusterMessageKind, number> {
    return { ...this.#rejected };
  }

  /** `payload` sealed for `place` (its Redis key or channel), void `lifeMs` from `now`. */
  seal(kind: ClusterMessageKind, place: string, payload: string, lifeMs: number, now = Date.now()): string {
    const until = String(Math.ceil(now + lifeMs));
    return `${VERSION}${until}.${this.#mac(this.#keys.get(kind)![0]!, place, until, payload).toString('base64url')}.${payload}`;
  }

  /**
   * The payload of `text` read at `place`, when it was sealed there as `kind` with one of the
   * secrets and is not void. Anything else is `undefined`: nothing (not a string, or empty) as a
   * miss, a text that does not verify counted and logged, one past its time logged.
   */
  open(kind: ClusterMessageKind, place: string, text: unknown, now = Date.now()): Opened | undefined {
    if (typeof text !== 'string' || text === '') return undefined;
    if (text.length > MAX_SEALED_BYTES || Buffer.byteLength(text) > MAX_SEALED_BYTES) return this.#reject(kind, 'too large');
    const head = SEALED.exec(text);
    if (head === null) return this.#reject(kind, text.startsWith(VERSION) ? 'malformed' : 'not sealed');
    const until = head[1]!;
    const given = Buffer.from(head[2]!, 'base64url');
    const payload = text.slice(VERSION.length + until.length + 1 + MAC_LENGTH + 1);
    let verified = false;
    for (const key of this.#keys.get(kind)!) {
      // Every key is tried, whichever matches: the time taken does not say which one did.
      if (timingSafeEqual(this.#mac(key, place, until, payload), given)) verified = true;
    }
    if (!verified) return this.#reject(kind, 'bad signature');
    if (Number(until) < now) {
      log('a %s past its time ignored', kind);
      return undefined;
    }
    return { payload, until: Number(until) };
  }

  #mac(key: Buffer, place: string, until: string, payload: string): Buffer {
    // The place is length-prefixed: no two (place, until, payload) give the same input.
    return createHmac('sha256', key)
      .update(`${Buffer.byteLength(place)}:`)
      .update(place)
      .update(`.${until}.`)
      .update(payload)
      .digest();
  }

  #reject(kind: ClusterMessageKind, why: string): undefined {
    this.#rejected[kind]++;
    // Neither the place (a token's hash) nor the text: only what was refused and why.
    log('a %s refused (%s): not written by an instance given this cluster secret', kind, why);
    return undefined;
  }
}
