/**
 * Builds the XACML request context of an invocation (spec 4.3, DESIGN "XACML request built from
 * an invocation"). Pure: no Express, no I/O; the middleware gathers the inputs.
 *
 * @module
 */
import type { GatewayContext } from '../context.js';
import { tokenFacts } from '../token/forward/token-facts.js';
import { removeQueryParameter } from '../token/forward/query.js';
import { ACCESS_SUBJECT, XS_STRING } from '../xacml/request-context.js';
import type { RequestAttribute, RequestContext } from '../xacml/request-context.js';
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
const ALWAYS_EXCLUDED_HEADERS = new Set(['authorization']);

/**
 * Builds the XACML 2.0 request context of an invocation: every attribute of spec 4.3 that the
 * invocation and its token can supply, `xs:string`-typed, multi-valued items as bags (the three
 * standard environment attributes use their standard types `xs:time`, `xs:date`, `xs:dateTime`).
 * The token itself never appears: the `Authorization` header and the `access_token` URL
 * parameter are left out, and as a last guard any value containing the raw token is dropped.
 * See `docs/xacml-attributes.md` for every attribute id with an example.
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
  const facts = tokenFacts(token);
  const serviceType = invocation.service.type ?? 'gw';
  const providerType = invocation.provider.type ?? 'gw';
  const url = removeQueryParameter(invocation.url, 'access_token');
  // Origin-form is appended to a dummy origin rather than resolved against it, so that a path
  // such as `//host/x` stays a path instead of becoming a host.
  const parsed = new URL(url.startsWith('/') ? `http://gateway.invalid${url}` : url);

  const action: AttributeBag = new Map();
  addValues(action, A.actionId, [invocation.operation]);
  addValues(action, A.action, [invocation.operation]);
  addValues(action, A.service, [`${serviceType}/${invocation.service.name}`]);
  addValues(action, A.provider, [`${providerType}/${invocation.provider.name}`]);
  addValues(action, A.url, [url]);
  addValues(action, A.gwService, [invocation.gwService ?? 'inbound']);
  addValues(action, A.protocol, [invocation.protocol ?? 'rest']);
  addValues(action, A.audience, facts.audience);
  addValues(action, A.scope, facts.scopes);
  for (const [name, value] of parsed.searchParams) addValues(action, A.urlParameterPrefix + name, [value]);
  const excluded = options.excludeHeaders?.length
    ? new Set([...ALWAYS_EXCLUDED_HEADERS, ...options.excludeHeaders.map((h) => h.toLowerCase())])
    : ALWAYS_EXCLUDED_HEADERS;
  for (const [name, value] of Object.entries(invocation.headers)) {
    const lower = name.toLowerCase();
    if (value === undefined || excluded.has(lower)) continue;
    addValues(action, A.headerPrefix + lower, typeof value === 'string' ? [value] : value);
    if (lower === 'soapaction') addValues(action, A.soapAction, typeof value === 'string' ? [value] : value);
  }
  for (const [name, value] of Object.entries(token?.jwt ?? {})) addClaim(action, A.jwtClaimPrefix, name, value);
  for (const [name, value] of Object.entries(token?.introspection ?? {})) addClaim(action, A.introspectionClaimPrefix, name, value);

  const subject: AttributeBag = new Map();
  const subjectInfo = invocation.subject ?? {};
  const client = subjectInfo.client ?? facts.clientId;
  const credential = subjectInfo.credential ?? facts.username ?? facts.subject ?? facts.clientId;
  addValues(subject, A.subjectId, optional(facts.subject ?? client));
  addValues(subject, A.tokenIssuer, optional(facts.issuer));
  addValues(subject, A.tokenSubject, optional(facts.subject));
  addValues(subject, A.tokenUsername, optional(facts.username));
  addValues(subject, A.tokenClientId, optional(facts.clientId));
  addValues(subject, A.userInfoFullName, optional(facts.userInfo.fullName));
  addValues(subject, A.userInfoFirstName, optional(facts.userInfo.firstName));
  addValues(subject, A.userInfoMiddleName, optional(facts.userInfo.middleName));
  addValues(subject, A.userInfoFamilyName, optional(facts.userInfo.familyName));
  addValues(subject, A.userInfoEMail, optional(facts.userInfo.eMail));
  for (const [name, value] of Object.entries(token?.userInfo ?? {})) addClaim(subject, A.userInfoClaimPrefix, name, value);
  addValues(subject, A.organization, optional(subjectInfo.organization));
  addValues(subject, A.client, optional(client));
  addValues(subject, A.credential, optional(credential));
  addValues(subject, A.role, subjectInfo.roles ?? facts.roles);

  const resource: AttributeBag = new Map();
  addValues(resource, A.resourceId, [parsed.pathname]);

  const now = (invocation.now ?? new Date()).toISOString();
  const date = now.slice(0, 10);
  const time = now.slice(11);
  const raw = token?.raw;
  return {
    subjects: [{ subjectCategory: ACCESS_SUBJECT, attributes: toAttributes(subject, raw) }],
    resources: [{ attributes: toAttributes(resource, raw) }],
    action: { attributes: toAttributes(action, raw) },
    environment: {
      attributes: [
        { attributeId: A.currentTime, dataType: XS_TIME, values: [time] },
        { attributeId: A.currentDate, dataType: XS_DATE, values: [`${date}Z`] },
        { attributeId: A.currentDateTime, dataType: XS_DATE_TIME, values: [now] },
      ],
    },
  };
}

function optional(value: string | undefined): string[] {
  return value === undefined || value === '' ? [] : [value];
}

function toAttributes(bag: AttributeBag, rawToken: string | undefined): RequestAttribute[] {
  const attributes: RequestAttribute[] = [];
  for (const [attributeId, allValues] of bag) {
    // Last guard: a token copied into another header or parameter must not reach the PDP either.
    const values = rawToken ? allValues.filter((v) => !v.includes(rawToken)) : allValues;
    if (values.length > 0) attributes.push({ attributeId, dataType: XS_STRING, values });
  }
  return attributes;
}
