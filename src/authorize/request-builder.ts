/**
 * Builds the XACML request context of an invocation (docs/xacml-attributes.md, "Every attribute").
 * Pure: no Express, no I/O; the middleware gathers the inputs.
 *
 * @module
 */
import type { GatewayContext, TokenContext } from '../context.js';
import { tokenFacts, type TokenFacts } from '../token/facts.js';
// The one helper that strips `access_token` from a URL (the forwarder uses it too).
import { removeQueryParameter } from '../url/parameters.js';
import { ACCESS_SUBJECT, XS_STRING } from '../xacml/request-context.js';
import type { RequestAttribute, RequestContext } from '../xacml/request-context.js';
import type { AttributeReferences } from '../xacml/pdp.js';
import { XacmlAttributes as A, XS_DATE, XS_DATE_TIME, XS_TIME } from './attributes.js';
import { addClaim, addValues } from './flatten.js';
import type { AttributeBag } from './flatten.js';

/** The caller as the gateway knows it, for the `org:gateway:subject:*` attributes. */
export interface XacmlSubjectInfo {
  /** Consuming subject (`org:gateway:subject:organization`). No default. */
  organization?: string;
  /** Client application (`org:gateway:subject:client`). Default: the token's client id. */
  client?: string;
  /** Credential used (`org:gateway:subject:credential`). Default: token username, else subject, else client id. */
  credential?: string;
  /** Roles of the client (`org:gateway:subject:role`). Default: the token's roles. */
  roles?: readonly string[];
}

/** The invocation data the XACML request is built from. */
export interface XacmlInvocation {
  /** HTTP method, for example `PUT`. */
  method: string;
  /**
   * The URL as the sender used it, absolute (`http://host/gateway/Ente/PetStore/v1/pet?x=1`) or
   * origin-form (`/gateway/...?x=1`). `access_token` is removed before it is used.
   */
  url: string;
  /** The request headers (Node's `IncomingHttpHeaders`: lower-case names). */
  headers: Readonly<Record<string, string | readonly string[] | undefined>>;
  /** Operation name (`action-id` and `org:gateway:action:action`). */
  operation: string;
  /** The invoked service; `type` defaults to `gw`. */
  service: {
    /** Service type. Default `gw`. */
    type?: string;
    /** Service (API) name, for example `PetStore`; `org:gateway:action:service` is `<type>/<name>`. */
    name: string;
    /** Version number, for example `1`. Not an attribute of the request. */
    version?: string | number;
  };
  /** The providing subject; `type` defaults to `gw`. */
  provider: {
    /** Provider type. Default `gw`. */
    type?: string;
    /** Providing subject, for example `Ente`; `org:gateway:action:provider` is `<type>/<name>`. */
    name: string;
  };
  /** Usage profile (`org:gateway:action:protocol`). Default `rest`. */
  protocol?: string;
  /** Role of the transaction (`org:gateway:action:gwService`). Default `inbound`. */
  gwService?: string;
  /** The caller; see {@link XacmlSubjectInfo} for the defaults taken from the token. */
  subject?: XacmlSubjectInfo;
  /** Time of the request, for the environment attributes. Default: now. */
  now?: Date;
}

/** Options of {@link buildXacmlRequest}. */
export interface BuildXacmlRequestOptions {
  /**
   * Header names (any case) left out of the request besides `authorization`, which is always
   * left out because it carries the token. For example `['cookie']`.
   */
  excludeHeaders?: readonly string[];
}

/** The headers that can carry credentials of the request itself and are never attributes. */
const ALWAYS_EXCLUDED_HEADERS: ReadonlySet<string> = new Set(['authorization']);

/**
 * The attributes that depend on the token alone, in the places the request puts them. They are the
 * same for every request with the same token, so `xacmlAuthorize` computes them once per cached
 * token result (see {@link tokenAttributes}).
 */
export interface TokenAttributes {
  /** The token's normalized facts the per-request attributes also use (subject, client id, roles). */
  readonly facts: TokenFacts;
  /** Action: audience and scope bags (after the invocation attributes). */
  readonly audienceAndScope: readonly RequestAttribute[];
  /** Action: every JWT and introspection claim, flattened (last). */
  readonly claims: readonly RequestAttribute[];
  /** Subject: the token and UserInfo attributes and the flattened UserInfo claims (after subject-id). */
  readonly subject: readonly RequestAttribute[];
  /** The sender constraint the request proved, which the subject attributes name (see {@link provenBinding}). */
  readonly binding: string | undefined;
}

/**
 * Computes the token-derived attributes of {@link buildXacmlRequest}. Values that contain the raw
 * token are dropped, as everywhere in the request.
 */
export function tokenAttributes(token: TokenContext | undefined): TokenAttributes {
  const facts = tokenFacts(token);
  const raw = token?.raw;

  const audienceAndScope: AttributeBag = new Map();
  addValues(audienceAndScope, A.audience, facts.audience);
  addValues(audienceAndScope, A.scope, facts.scopes);

  const claims: AttributeBag = new Map();
  for (const [name, value] of Object.entries(token?.jwt ?? {})) addClaim(claims, A.jwtClaimPrefix, name, value);
  for (const [name, value] of Object.entries(token?.introspection ?? {})) addClaim(claims, A.introspectionClaimPrefix, name, value);

  const subject: AttributeBag = new Map();
  addValues(subject, A.tokenIssuer, optional(facts.issuer));
  addValues(subject, A.tokenSubject, optional(facts.subject));
  addValues(subject, A.tokenUsername, optional(facts.username));
  addValues(subject, A.tokenClientId, optional(facts.clientId));
  addValues(subject, A.tokenBinding, optional(provenBinding(token)));
  addValues(subject, A.userInfoFullName, optional(facts.userInfo.fullName));
  addValues(subject, A.userInfoFirstName, optional(facts.userInfo.firstName));
  addValues(subject, A.userInfoMiddleName, optional(facts.userInfo.middleName));
  addValues(subject, A.userInfoFamilyName, optional(facts.userInfo.familyName));
  addValues(subject, A.userInfoEMail, optional(facts.userInfo.eMail));
  for (const [name, value] of Object.entries(token?.userInfo ?? {})) addClaim(subject, A.userInfoClaimPrefix, name, value);

  return {
    facts,
    audienceAndScope: toAttributes(audienceAndScope, raw),
    claims: toAttributes(claims, raw),
    subject: toAttributes(subject, raw),
    binding: provenBinding(token),
  };
}

/** The header names an options object leaves out, lower-cased, `authorization` included. */
export function excludedHeaders(options: BuildXacmlRequestOptions = {}): ReadonlySet<string> {
  return options.excludeHeaders?.length
    ? new Set([...ALWAYS_EXCLUDED_HEADERS, ...options.excludeHeaders.map((h) => h.toLowerCase())])
    : ALWAYS_EXCLUDED_HEADERS;
}

/**
 * Builds the XACML 2.0 request context of an invocation: every attribute that the invocation and
 * its token can supply, `xs:string`-typed, multi-valued items as bags (the three standard
 * environment attributes use their standard types `xs:time`, `xs:date`, `xs:dateTime`). The token
 * itself never appears: the `Authorization` header and the `access_token` URL parameter are left
 * out, and as a last guard any value containing the raw token is dropped. See
 * `docs/xacml-attributes.md` for every attribute id with an example.
 *
 * @param invocation - what was invoked, how and by whom.
 * @param context - the request's gateway context; its `token` supplies the token attributes.
 * @example
 * ```ts
 * const request = buildXacmlRequest(
 *   { method: 'GET', url: '/gateway/Ente/PetStore/v1/pet/1', headers: req.headers, operation: 'GET /pet/1',
 *     service: { name: 'PetStore', version: 1 }, provider: { name: 'Ente' } },
 *   req.gateway,
 * );
 * pdp.evaluate(request);
 * ```
 */
export function buildXacmlRequest(
  invocation: XacmlInvocation,
  context?: Pick<GatewayContext, 'token'>,
  options: BuildXacmlRequestOptions = {},
): RequestContext {
  const token = context?.token;
  return assembleXacmlRequest(invocation, token?.raw, tokenAttributes(token), excludedHeaders(options));
}

/**
 * The attribute ids, per category, that a compiled policy can read (from its `Pdp.references`):
 * {@link assembleXacmlRequest} given one builds only those. Subject ids are those of any subject
 * category (a superset of what the request's access-subject needs).
 */
export interface AttributeSelection {
  /** Subject attribute ids. */
  readonly subject: ReadonlySet<string>;
  /** Resource attribute ids (the resource id is built whatever this says). */
  readonly resource: ReadonlySet<string>;
  /** Action attribute ids. */
  readonly action: ReadonlySet<string>;
  /** Environment attribute ids. */
  readonly environment: ReadonlySet<string>;
}

/**
 * The {@link AttributeSelection} of a compiled policy's references (its designators and the
 * attributes its selectors read by id), or `undefined` when the policy reads the request
 * document as a whole (another `AttributeSelector` or an XPath function): then every attribute
 * may matter and the full request must be built.
 */
export function attributeSelection(references: AttributeReferences): AttributeSelection | undefined {
  if (references.selectors) return undefined;
  const selection = { subject: new Set<string>(), resource: new Set<string>(), action: new Set<string>(), environment: new Set<string>() };
  for (const designator of references.designators) selection[designator.category].add(designator.attributeId);
  // (`selected` is absent from the references of a Pdp written before selectors had it.)
  for (const read of references.selected ?? []) selection[read.category].add(read.attributeId);
  return selection;
}

/**
 * {@link buildXacmlRequest} with its token part and excluded headers already computed: the
 * invocation's own attributes are built here, the token's are taken as given. With `only`, the
 * attributes whose id it does not list are left out (not even built): a PDP whose references
 * gave `only` decides the same on the smaller request.
 */
export function assembleXacmlRequest(
  invocation: XacmlInvocation,
  rawToken: string | undefined,
  tokenPart: TokenAttributes,
  excluded: ReadonlySet<string>,
  only?: AttributeSelection,
): RequestContext {
  const { facts } = tokenPart;
  const serviceType = invocation.service.type ?? 'gw';
  const providerType = invocation.provider.type ?? 'gw';
  const url = removeQueryParameter(invocation.url, 'access_token');
  const { pathname, searchParams } = parseUrl(url);
  const raw = rawToken === '' ? undefined : rawToken;
  const actionIds = only?.action;
  const subjectIds = only?.subject;

  // Built attribute by attribute (the ids here are all distinct, so no bag merging is needed);
  // only URL parameters and headers, which may repeat, go through a bag.
  const action: RequestAttribute[] = [];
  if (wanted(actionIds, A.actionId)) one(action, A.actionId, invocation.operation, raw);
  if (wanted(actionIds, A.action)) one(action, A.action, invocation.operation, raw);
  if (wanted(actionIds, A.service)) one(action, A.service, `${serviceType}/${invocation.service.name}`, raw);
  if (wanted(actionIds, A.provider)) one(action, A.provider, `${providerType}/${invocation.provider.name}`, raw);
  if (wanted(actionIds, A.url)) one(action, A.url, url, raw);
  if (wanted(actionIds, A.gwService)) one(action, A.gwService, invocation.gwService ?? 'inbound', raw);
  if (wanted(actionIds, A.protocol)) one(action, A.protocol, invocation.protocol ?? 'rest', raw);
  pushWanted(action, tokenPart.audienceAndScope, actionIds);
  const transport: AttributeBag = new Map();
  if (searchParams !== undefined) {
    for (const [name, value] of searchParams) {
      const id = A.urlParameterPrefix + name;
      if (wanted(actionIds, id)) addValues(transport, id, [value]);
    }
  }
  const headers = invocation.headers;
  for (const name of Object.keys(headers)) {
    const value = headers[name];
    const lower = name.toLowerCase();
    if (value === undefined || excluded.has(lower)) continue;
    const id = A.headerPrefix + lower;
    if (wanted(actionIds, id)) addValues(transport, id, typeof value === 'string' ? [value] : value);
    if (lower === 'soapaction' && wanted(actionIds, A.soapAction))
      addValues(transport, A.soapAction, typeof value === 'string' ? [value] : value);
  }
  appendAttributes(action, transport, raw);
  pushWanted(action, tokenPart.claims, actionIds);

  const subjectInfo = invocation.subject ?? {};
  const client = subjectInfo.client ?? facts.clientId;
  const credential = subjectInfo.credential ?? facts.username ?? facts.subject ?? facts.clientId;
  const subject: RequestAttribute[] = [];
  if (wanted(subjectIds, A.subjectId)) optionalOne(subject, A.subjectId, facts.subject ?? client, raw);
  pushWanted(subject, tokenPart.subject, subjectIds);
  if (wanted(subjectIds, A.organization)) optionalOne(subject, A.organization, subjectInfo.organization, raw);
  if (wanted(subjectIds, A.client)) optionalOne(subject, A.client, client, raw);
  if (wanted(subjectIds, A.credential)) optionalOne(subject, A.credential, credential, raw);
  if (wanted(subjectIds, A.role)) bag(subject, A.role, subjectInfo.roles ?? facts.roles, raw);

  // The resource id always: the PDP reads it (with the scope) to expand hierarchical requests.
  const resource: RequestAttribute[] = [];
  one(resource, A.resourceId, pathname, raw);

  const environment: RequestAttribute[] = [];
  const environmentIds = only?.environment;
  if (environmentIds === undefined || environmentIds.size > 0) {
    const now = (invocation.now ?? new Date()).toISOString();
    if (wanted(environmentIds, A.currentTime)) environment.push({ attributeId: A.currentTime, dataType: XS_TIME, values: [now.slice(11)] });
    if (wanted(environmentIds, A.currentDate))
      environment.push({ attributeId: A.currentDate, dataType: XS_DATE, values: [`${now.slice(0, 10)}Z`] });
    if (wanted(environmentIds, A.currentDateTime))
      environment.push({ attributeId: A.currentDateTime, dataType: XS_DATE_TIME, values: [now] });
  }
  return {
    subjects: [{ subjectCategory: ACCESS_SUBJECT, attributes: subject }],
    resources: [{ attributes: resource }],
    action: { attributes: action },
    environment: { attributes: environment },
  };
}

/** Whether an attribute id is to be built: every one without a selection. */
function wanted(ids: ReadonlySet<string> | undefined, attributeId: string): boolean {
  return ids === undefined || ids.has(attributeId);
}

/** Appends the attributes a selection wants (all of them without one). */
function pushWanted(list: RequestAttribute[], attributes: readonly RequestAttribute[], ids: ReadonlySet<string> | undefined): void {
  for (let i = 0; i < attributes.length; i++) {
    const attribute = attributes[i]!;
    if (ids === undefined || ids.has(attribute.attributeId)) list.push(attribute);
  }
}

/** Appends a one-value string attribute, unless the value contains the token. */
function one(list: RequestAttribute[], attributeId: string, value: string, rawToken: string | undefined): void {
  if (rawToken !== undefined && value.includes(rawToken)) return;
  list.push({ attributeId, dataType: XS_STRING, values: [value] });
}

/** {@link one} for a value that may be missing (absent or empty: no attribute). */
function optionalOne(list: RequestAttribute[], attributeId: string, value: string | undefined, rawToken: string | undefined): void {
  if (value !== undefined && value !== '') one(list, attributeId, value, rawToken);
}

/** Appends a bag attribute of the values that do not contain the token, if any. */
function bag(list: RequestAttribute[], attributeId: string, values: readonly string[], rawToken: string | undefined): void {
  const kept = rawToken === undefined ? [...values] : values.filter((v) => !v.includes(rawToken));
  if (kept.length > 0) list.push({ attributeId, dataType: XS_STRING, values: kept });
}

// An absolute http(s) URL split into its authority and the rest, and the characters a WHATWG URL
// path keeps as they are (no percent-encoding, no dot segments, no backslash): for such a URL,
// with a host `new URL` surely accepts, the path is its own `pathname` and parsing can be skipped.
const ABSOLUTE = /^https?:\/\/([^/?#\\]+)(?=\/)/i;
const PLAIN_PATH = /^\/[A-Za-z0-9\-._~!$&'()*+,;=:@/]*$/;
// A host name whose last label starts with a letter (so it is not read as an IPv4 address), or a
// dotted IPv4 address, each with an optional port.
const PLAIN_NAME = /^(?:[A-Za-z0-9-]+\.)*[A-Za-z][A-Za-z0-9-]*(?::\d{1,5})?$/;
const OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const PLAIN_IPV4 = new RegExp(`^(?:${OCTET}\\.){3}${OCTET}(?::\\d{1,5})?$`);
const PUNYCODE = /(?:^|\.)xn--/i;

/** Whether `new URL` accepts `authority` as is: an ASCII host name or a dotted IPv4 address, an optional port. */
function plainAuthority(authority: string): boolean {
  if (PLAIN_NAME.test(authority)) {
    // A punycode label is decoded and checked by the URL parser: leave those to it.
    if (PUNYCODE.test(authority)) return false;
  } else if (!PLAIN_IPV4.test(authority)) {
    return false;
  }
  const colon = authority.lastIndexOf(':');
  return colon === -1 || Number(authority.slice(colon + 1)) <= 65535;
}

/** The path and query parameters of `url`, as `new URL` gives them, without parsing when the URL is plain. */
function parseUrl(url: string): { pathname: string; searchParams: URLSearchParams | undefined } {
  let path: string | undefined = url;
  if (!url.startsWith('/')) {
    const origin = ABSOLUTE.exec(url);
    path = origin !== null && plainAuthority(origin[1]!) ? url.slice(origin[0].length) : undefined;
  }
  if (path !== undefined && PLAIN_PATH.test(path) && !path.includes('/.')) return { pathname: path, searchParams: undefined };
  // Origin-form is appended to a dummy origin rather than resolved against it, so that a path
  // such as `//host/x` stays a path instead of becoming a host.
  const parsed = new URL(url.startsWith('/') ? `http://gateway.invalid${url}` : url);
  return { pathname: parsed.pathname, searchParams: parsed.searchParams };
}

/** The kind of the sender constraint the request proved (`x5t#S256`), if any. */
export function provenBinding(token: TokenContext | undefined): string | undefined {
  return token?.binding?.result === 'verified' ? token.binding.kind : undefined;
}

function optional(value: string | undefined): string[] {
  return value === undefined || value === '' ? [] : [value];
}

function toAttributes(bag: AttributeBag, rawToken: string | undefined): RequestAttribute[] {
  const attributes: RequestAttribute[] = [];
  appendAttributes(attributes, bag, rawToken);
  return attributes;
}

function appendAttributes(attributes: RequestAttribute[], bag: AttributeBag, rawToken: string | undefined): void {
  for (const [attributeId, allValues] of bag) {
    // Last guard: a token copied into another header or parameter must not reach the PDP either.
    // (The bag's arrays are this request's own: kept as they are when nothing is dropped.)
    const values = rawToken && allValues.some((v) => v.includes(rawToken)) ? allValues.filter((v) => !v.includes(rawToken)) : allValues;
    if (values.length > 0) attributes.push({ attributeId, dataType: XS_STRING, values });
  }
}
