/**
 * The options of `forwardTokenHeaders`, checked once when the middleware is created, and what is
 * settled from them: the modes, the header names, and which client headers are stripped.
 *
 * @module
 */
import type { KeyInput } from 'jose';
import { optionChecks, optionKeys, type OptionChecks } from '../../options.js';
import { defaultForwardedHeaderNames } from './items.js';
import type { ForwardDateFormat, ForwardedItem } from './items.js';
import { firstLetter, isTokenCredential, SENDER_PROOF_HEADERS, type HeaderFilter } from './request-edits.js';
import { issuePath } from '../../issues.js';
import { schemaIssues } from '../../schema.js';
import type { Static } from '@sinclair/typebox';
import { FORWARD_INFO_MODES, OriginalTokenSchema } from './schema.js';

/** How the collected token information travels: one header per item, a base64 JSON, or a signed JWT. */
export type ForwardInfoMode = 'headers' | 'json' | 'jws';

/**
 * Whether and how the original token is passed on as well:
 * - `asReceived`: the way the client sent it (header, query or form body);
 * - `authorizationHeader`: as `Authorization: Bearer <token>`;
 * - `query`: as the `access_token` URL parameter;
 * - `{ header: name }`: as the bare value of a custom header.
 */
export type OriginalTokenMode =
  | 'asReceived'
  | 'authorizationHeader'
  | 'query'
  | {
      /** Name of the header that carries the bare token, for example `X-Access-Token`. */
      header: string;
    };

type SameShape<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

/** The option types of `forwardTokenHeaders`, written out for the API reference, are the schemas' of schema.ts (the build fails otherwise).  @internal */
export const FORWARD_TYPES_AGREE: [
  SameShape<ForwardInfoMode, (typeof FORWARD_INFO_MODES)[number]>,
  SameShape<OriginalTokenMode | 'none' | false, Static<typeof OriginalTokenSchema>>,
] = [true, true];

/** The signing key of `jws` mode. */
export interface ForwardJwsOptions {
  /** Private key or shared secret: `CryptoKey`, `KeyObject`, JWK or bytes (anything `jose` signs with). */
  key: KeyInput;
  /** JWS algorithm, for example `RS256`, `ES256`, `EdDSA`, `HS256`. */
  alg: string;
  /** `kid` of the protected header, so the backend can pick the verification key. */
  kid?: string;
}

/** Options of {@link forwardTokenHeaders}. */
export interface ForwardTokenHeadersOptions {
  /** Collected-information mode(s). Default `headers`. `[]` forwards no token information. */
  mode?: ForwardInfoMode | readonly ForwardInfoMode[];
  /**
   * Pass the original token on as well. Default `false`: the backend never sees it. `'none'`, the
   * configuration file's spelling, is the same as `false`.
   */
  originalToken?: OriginalTokenMode | 'none' | false;
  /** Signing key of `jws` mode (required with it). */
  jws?: ForwardJwsOptions;
  /** Date format of `Expire`, `IssuedAt`, `NotToBeUsedBefore` in every mode. Default `iso`. */
  dateFormat?: ForwardDateFormat;
  /** Header names of `headers` mode, replacing the defaults item by item. */
  headerNames?: Partial<Record<ForwardedItem, string>>;
  /** Header of `json` mode. Default `Gateway-Token`. */
  jsonHeader?: string;
  /** Header of `jws` mode. Default `Gateway-JWT`. */
  jwsHeader?: string;
  /**
   * Header carrying the transaction id to the backend; `false` for none. Default
   * `Gateway-Transaction-ID`. `createRelay` sends `Gateway-Transaction-ID` itself: `false` leaves it
   * the only one to set it (as `createGateway` does); with the default both set the same value.
   */
  transactionIdHeader?: string | false;
}

/** What {@link forwardTokenHeaders} works with, its options checked. */
export interface ForwardSettings {
  readonly modes: ReadonlySet<ForwardInfoMode>;
  readonly originalToken: OriginalTokenMode | false;
  readonly jws: ForwardJwsOptions | undefined;
  readonly dateFormat: ForwardDateFormat;
  readonly headerNames: Readonly<Record<ForwardedItem, string>>;
  readonly jsonHeader: string;
  readonly jwsHeader: string;
  readonly transactionIdHeader: string | false;
  /** The client headers to strip: spoofable names, the token's `Authorization` (Bearer or DPoP) and the DPoP proof. */
  readonly strip: HeaderFilter;
  /** Lower-case names this middleware sets that a plain append may add to `rawHeaders`. */
  readonly appendable: ReadonlySet<string>;
  /** The lower-case form of a header name (looked up for the configured ones). */
  lowerOf(name: string): string;
}

const FORWARD_KEYS = optionKeys<ForwardTokenHeadersOptions>({
  mode: true,
  originalToken: true,
  jws: true,
  dateFormat: true,
  headerNames: true,
  jsonHeader: true,
  jwsHeader: true,
  transactionIdHeader: true,
});
const JWS_KEYS = optionKeys<ForwardJwsOptions>({ key: true, alg: true, kid: true });

/** Checks the options of {@link forwardTokenHeaders}, throwing `InvalidOptionError` that names the option. */
export function forwardSettings(options: ForwardTokenHeadersOptions): ForwardSettings {
  const check = optionChecks('forwardTokenHeaders');
  check.object(options, '');
  check.known(options, '', FORWARD_KEYS);
  if (options.jws !== null && typeof options.jws === 'object') check.known(options.jws, 'jws', JWS_KEYS);
  if (options.headerNames !== undefined) check.known(options.headerNames, 'headerNames', Object.keys(defaultForwardedHeaderNames));
  const modeList: readonly unknown[] =
    options.mode === undefined ? ['headers'] : typeof options.mode === 'string' ? [options.mode] : options.mode;
  if (!Array.isArray(modeList) && typeof options.mode !== 'string') check.fail('mode', 'must be headers, json, jws or an array of them');
  const modes = new Set<ForwardInfoMode>(
    modeList.map((mode, i) => check.oneOf(mode, Array.isArray(options.mode) ? `mode[${i}]` : 'mode', FORWARD_INFO_MODES)),
  );
  const originalToken = originalTokenMode(options.originalToken, check);
  const jws = options.jws;
  if (modes.has('jws')) {
    if (jws === undefined || jws === null || jws.key === undefined || typeof jws.alg !== 'string' || jws.alg === '' || jws.alg === 'none') {
      check.fail('jws', 'must give a signing key and an alg (not none) for jws mode');
    }
  }
  const dateFormat = options.dateFormat ?? 'iso';
  if (typeof dateFormat !== 'function' && !(DATE_FORMATS as readonly string[]).includes(dateFormat)) {
    check.fail('dateFormat', `must be ${DATE_FORMATS.join(', ')} or a function`);
  }
  if (options.headerNames !== undefined) check.object(options.headerNames, 'headerNames');
  const headerNames: Record<ForwardedItem, string> = { ...defaultForwardedHeaderNames, ...options.headerNames };
  for (const item of Object.keys(headerNames)) check.headerName(headerNames[item as ForwardedItem], `headerNames.${item}`);
  const jsonHeader = check.headerName(options.jsonHeader, 'jsonHeader', 'Gateway-Token');
  const jwsHeader = check.headerName(options.jwsHeader, 'jwsHeader', 'Gateway-JWT');
  const transactionIdHeader =
    options.transactionIdHeader === false
      ? false
      : check.headerName(options.transactionIdHeader, 'transactionIdHeader', 'Gateway-Transaction-ID');
  // Every name this middleware may set is stripped from what the client sent, whatever the mode.
  const spoofable = new Set(
    [...Object.values(headerNames), jsonHeader, jwsHeader, ...(transactionIdHeader ? [transactionIdHeader] : [])].map((n) =>
      n.toLowerCase(),
    ),
  );
  if (typeof originalToken === 'object') spoofable.add(originalToken.header.toLowerCase());
  // `_` and `-` compare equal: CGI/WSGI backends read `Gateway_Token_Subject` as `Gateway-Token-Subject`.
  const isSpoofable = (lowerName: string): boolean => {
    const name = lowerName.includes('_') ? lowerName.replaceAll('_', '-') : lowerName;
    return name.startsWith('gateway-') || spoofable.has(name);
  };
  // The token goes in every case (an original-token mode puts back what it defines), and so does
  // the proof of possession of a sender-constrained one: neither is the backend's.
  const dropHeader = (lower: string, value: string): boolean =>
    isSpoofable(lower) || (lower === 'authorization' && isTokenCredential(value)) || SENDER_PROOF_HEADERS.has(lower);
  // The first letters (lower-cased) of every name that may be dropped: most headers are passed
  // over on their first character, without lower-casing their name.
  const dropFirst = new Set([...spoofable, 'gateway-', 'authorization', ...SENDER_PROOF_HEADERS].map(firstLetter));
  const strip: HeaderFilter = { mayDrop: (name) => dropFirst.has(firstLetter(name)), drop: dropHeader };
  // Names this middleware sets, lower-cased once. When they are all distinct, each one was just
  // stripped from rawHeaders, so setting it is a plain append (no scan of rawHeaders per header).
  const configuredNames = [
    ...Object.values(headerNames),
    jsonHeader,
    jwsHeader,
    ...(transactionIdHeader ? [transactionIdHeader] : []),
    ...(typeof originalToken === 'object' ? [originalToken.header] : []),
  ];
  const lowerNames = new Map(configuredNames.map((n) => [n, n.toLowerCase()]));
  const appendable: ReadonlySet<string> = new Set(lowerNames.values()).size === configuredNames.length ? spoofable : new Set();
  const lowerOf = (name: string): string => lowerNames.get(name) ?? name.toLowerCase();
  return { modes, originalToken, jws, dateFormat, headerNames, jsonHeader, jwsHeader, transactionIdHeader, strip, appendable, lowerOf };
}

const DATE_FORMATS = ['iso', 'epoch', 'epochMillis', 'http'] as const;

/**
 * The `originalToken` option: `false` or `'none'` (the configuration file's spelling) for none, a
 * mode, or `{ header }`.
 */
function originalTokenMode(value: ForwardTokenHeadersOptions['originalToken'], check: OptionChecks): OriginalTokenMode | false {
  if (value === undefined) return false;
  // The rules of the configuration file's `originalToken`: one schema for both.
  const [issue] = schemaIssues(OriginalTokenSchema, value);
  if (issue !== undefined) check.fail(issuePath('originalToken', issue.path), issue.message);
  if (value === false || value === 'none') return false;
  return typeof value === 'object' ? { header: value.header } : value;
}
