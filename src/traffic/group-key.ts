/**
 * A policy's groups: from a request's facts and the policy's `groupBy`, the group's label (shown in
 * records, headers' diagnostics and consoles) and its hash (the store key's last part). The hash
 * has a fixed size whatever the client sends: SHA-256 of the values, each length-prefixed (and
 * tagged: a missing fact, a value), so that no two lists of values (nor a value and a missing
 * fact) meet by concatenation or by encoding. Everything but the hashing itself is done at compile time.
 *
 * A credential never becomes a label: the value of a header that carries one (every header the
 * records redact, `DEFAULT_REDACTED_HEADERS`: `X-Api-Key`, `Authorization`, `Cookie`...) is shown
 * as `hmac:` and 16 hex digits of its HMAC-SHA256 under a {@link GroupLabelKey}, a key the gateway
 * holds: this process's own (random, made at start), or one derived from the cluster secret, so that
 * instances given the same secret show one key by one label. Counting is unchanged: the group's
 * hash is still that of the value itself, so each key keeps its own exact count.
 *
 * @module
 */
import { createHmac, hash, hkdfSync, randomBytes } from 'node:crypto';
import { DEFAULT_REDACTED_HEADERS } from './credential-headers.js';
import type { TrafficFacts } from './types.js';

/** The longest value a label shows, in characters. */
export const LABEL_VALUE_CHARS = 64;
/** The label of a policy without `groupBy`: one counter. */
export const WHOLE_GROUP = '*';
/** A missing fact's value in a label (its hash differs from a sent `-`). */
export const MISSING_VALUE = '-';
/** What a credential's label starts with, before the hex digits of its keyed hash. */
export const CREDENTIAL_LABEL_PREFIX = 'hmac:';
/** Hex digits of a credential's keyed hash a label shows (64 bits: the label tells groups apart; counting does not read it). */
const CREDENTIAL_LABEL_DIGITS = 16;

/** The headers whose values are credentials, in lower case (the records' redaction list). */
const CREDENTIAL_HEADERS: ReadonlySet<string> = new Set(DEFAULT_REDACTED_HEADERS.map((name) => name.toLowerCase()));

const LABEL_KEY_SALT = 'express-access-gateway traffic group label';

/**
 * The key credentials' labels are hashed under (see the module comment). Make it with
 * {@link groupLabelKey}; it never shows its key.
 */
export class GroupLabelKey {
  readonly #key: Buffer;

  /** @internal Use {@link groupLabelKey}. */
  constructor(key: Buffer) {
    this.#key = key;
  }

  /** `hmac:` and the first 16 hex digits of the value's HMAC-SHA256 under this key. */
  label(value: string): string {
    const digest = createHmac('sha256', this.#key).update(value, 'utf8').digest('hex');
    return `${CREDENTIAL_LABEL_PREFIX}${digest.slice(0, CREDENTIAL_LABEL_DIGITS)}`;
  }
}

/** This process's key: random, made once; labels under it hold for the process's life only. */
const PROCESS_LABEL_KEY = new GroupLabelKey(randomBytes(32));

/**
 * The key of credentials' labels: derived from the cluster secret (the first of a list, the one
 * that signs: HKDF-SHA256 under a label of its own, so that it is no other key the secret makes),
 * or this process's own without one.
 */
export function groupLabelKey(clusterSecret?: string | readonly string[]): GroupLabelKey {
  const secret = typeof clusterSecret === 'string' ? clusterSecret : clusterSecret?.[0];
  if (secret === undefined || secret === '') return PROCESS_LABEL_KEY;
  return new GroupLabelKey(Buffer.from(hkdfSync('sha256', secret, LABEL_KEY_SALT, 'express-access-gateway traffic group label v1', 32)));
}

/** Whether a `groupBy` member reads a header whose values are credentials. */
function isCredentialFact(by: string): boolean {
  return by.startsWith('header:') && CREDENTIAL_HEADERS.has(by.slice('header:'.length).toLowerCase());
}

/** One group of one request. */
export interface GroupKey {
  /** `clientId=client1, operation=getPet`, `*` without `groupBy`. */
  readonly label: string;
  /** SHA-256 (base64url, 43 characters) of the policy's scope and the group's values. */
  readonly hash: string;
}

/** The group of a request's facts. */
export type GroupKeyFunction = (facts: TrafficFacts) => GroupKey;

type Reader = (facts: TrafficFacts) => string | undefined;

/** The value of a claim: the whole name first (URIs hold dots), then the dotted path; own members only. */
function claimReader(name: string): Reader {
  const path = name.split('.');
  return (facts) => {
    const claims = facts.claims;
    if (claims === undefined || claims === null) return undefined;
    let value: unknown = Object.hasOwn(claims, name) ? claims[name] : undefined;
    if (value === undefined && path.length > 1) {
      value = claims;
      for (const part of path) {
        if (value === null || typeof value !== 'object' || !Object.hasOwn(value, part)) return undefined;
        value = (value as Record<string, unknown>)[part];
      }
    }
    if (value === undefined) return undefined;
    if (typeof value === 'string') return value;
    try {
      return JSON.stringify(value);
    } catch {
      // A cycle or a BigInt: not a value a client can choose; one group for them.
      return '?';
    }
  };
}

/** Reads one `groupBy` member's value. */
export function factReader(by: string): Reader {
  if (by.startsWith('claim:')) return claimReader(by.slice('claim:'.length));
  if (by.startsWith('header:')) {
    const name = by.slice('header:'.length).toLowerCase();
    return (facts) => facts.header(name);
  }
  switch (by) {
    case 'clientId':
      return (facts) => facts.clientId;
    case 'subject':
      return (facts) => facts.subject;
    case 'issuer':
      return (facts) => facts.issuer;
    case 'clientAddress':
      return (facts) => facts.clientAddress;
    case 'api':
      return (facts) => facts.api;
    case 'operation':
      return (facts) => facts.operation;
    default:
      throw new TypeError(`unknown groupBy fact: ${by}`);
  }
}

// Controls (C0, DEL, C1) and line separators never reach a label: it is shown in logs and pages.
// eslint-disable-next-line no-control-regex
const UNSHOWABLE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;

/** A value as a label shows it: at most 64 characters, no control characters, no half of a pair. */
export function labelValue(value: string | undefined): string {
  if (value === undefined) return MISSING_VALUE;
  let cut = value.length > LABEL_VALUE_CHARS ? value.slice(0, LABEL_VALUE_CHARS) : value;
  const last = cut.charCodeAt(cut.length - 1);
  if (cut.length < value.length && last >= 0xd800 && last <= 0xdbff) cut = cut.slice(0, -1);
  return cut.replace(UNSHOWABLE, '\uFFFD');
}

/** How a fact's value is shown: cut and cleaned, or a credential's keyed hash. */
type Shower = (value: string | undefined) => string;

function showerOf(by: string, key: GroupLabelKey): Shower {
  if (!isCredentialFact(by)) return labelValue;
  return (value) => (value === undefined ? MISSING_VALUE : key.label(value));
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * A value as hashed: its length, then itself. A string with a lone surrogate (possible in a claim,
 * not in a header) is hashed by its UTF-16 code units in hex under a tag of its own, since UTF-8
 * would write any lone surrogate as U+FFFD.
 */
function part(value: string | undefined): string {
  if (value === undefined) return 'n';
  if (!LONE_SURROGATE.test(value)) return `v${value.length}:${value}`;
  const units = Buffer.from(value, 'utf16le').toString('hex');
  return `u${units.length}:${units}`;
}

function hashOf(scope: string, values: readonly (string | undefined)[]): string {
  let text = part(scope);
  for (const value of values) text += part(value);
  return hash('sha256', text, 'base64url');
}

/**
 * The group function of a policy: `scope` keeps apart the counters of policies of the same name
 * in different lists (`''` for the top-level list, the API's key for an API's); `labelKey` hashes
 * the credentials its labels would show (default: this process's key).
 */
export function compileGroupKey(groupBy: readonly string[], scope: string, labelKey: GroupLabelKey = PROCESS_LABEL_KEY): GroupKeyFunction {
  if (groupBy.length === 0) {
    const whole: GroupKey = Object.freeze({ label: WHOLE_GROUP, hash: hashOf(scope, []) });
    return () => whole;
  }
  const readers = groupBy.map(factReader);
  const names = groupBy.map((by) => `${by}=`);
  const showers = groupBy.map((by) => showerOf(by, labelKey));
  if (readers.length === 1) return oneFactGroupKey(readers[0]!, names[0]!, showers[0]!, scope);
  return (facts) => {
    const values = readers.map((read) => read(facts));
    let label = '';
    for (let i = 0; i < values.length; i++) label += `${i === 0 ? '' : ', '}${names[i]!}${showers[i]!(values[i])}`;
    return { label, hash: hashOf(scope, values) };
  };
}

/** Groups remembered by a one-fact policy (most requests come from a few clients); past it, forgotten at once. */
const REMEMBERED_GROUPS = 4096;
/** The longest value whose group is remembered (a longer one is hashed each time). */
const REMEMBERED_VALUE_CHARS = 256;

/**
 * The group function of a policy grouping by one fact: the group of a value seen lately is
 * remembered, so that the usual request (the same client again) costs a lookup, not a hash.
 */
function oneFactGroupKey(read: Reader, name: string, show: Shower, scope: string): GroupKeyFunction {
  const remembered = new Map<string | undefined, GroupKey>();
  return (facts) => {
    const value = read(facts);
    let key = remembered.get(value);
    if (key === undefined) {
      key = Object.freeze({ label: `${name}${show(value)}`, hash: hashOf(scope, [value]) });
      if (value === undefined || value.length <= REMEMBERED_VALUE_CHARS) {
        if (remembered.size >= REMEMBERED_GROUPS) remembered.clear();
        remembered.set(value, key);
      }
    }
    return key;
  };
}
