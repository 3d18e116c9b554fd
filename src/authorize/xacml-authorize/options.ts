/**
 * The options of `xacmlAuthorize` and their checks, done when the middleware is created.
 *
 * @module
 */
import type { IncomingMessage } from 'node:http';
import type { Request } from 'express';
import { optionChecks, optionKeys, type OptionChecks } from '../../options.js';
import type { RequestContext } from '../../xacml/request-context.js';
import type { XacmlObligation } from '../../xacml/index.js';
import { ApplicationRegistry, type ClientApplications } from '../applications.js';
import { checkEvaluatorOptions, filePathHint, filePathOf, XacmlPolicySource } from '../policy-source.js';
import type { XacmlEvaluatorOptions, XacmlPolicyDocuments, XacmlPolicyLoader } from '../policy-source.js';
import { excludedHeaders, type XacmlSubjectInfo } from '../request-builder.js';

/**
 * Fulfils one obligation for a request. Return `false` (or throw) when it cannot be fulfilled:
 * a Permit whose obligations are not all fulfilled is treated as Deny (XACML 2.0 section 7.14).
 */
export type XacmlObligationHandler<R extends IncomingMessage = Request> = (obligation: XacmlObligation, req: R) => boolean | void;

/**
 * Options of {@link xacmlAuthorize}. `R` is the request type its hooks receive: Express's `Request`
 * by default, `IncomingMessage` for a plain `node:http` chain.
 */
export interface XacmlAuthorizeOptions<R extends IncomingMessage = Request> extends XacmlEvaluatorOptions {
  /**
   * The XACML policy: XML text (compiled now: a bad one throws at start-up), several texts or
   * `{ policies, references }`, a loader (called at first use and after `reset()`/`reload()`), or
   * an {@link XacmlPolicySource} you created (then the evaluator options here are ignored).
   * Required (or its deprecated alias `policy`).
   */
  xacmlPolicy?: XacmlPolicyDocuments | XacmlPolicyLoader | XacmlPolicySource;
  /**
   * The former name of {@link XacmlAuthorizeOptions.xacmlPolicy}, which it still means.
   *
   * @deprecated Use `xacmlPolicy`: in `requireToken` and `introspect`, `policy` is the token
   * policy. This alias is removed in the next minor version.
   */
  policy?: XacmlPolicyDocuments | XacmlPolicyLoader | XacmlPolicySource;
  /** Referenced documents (`PolicyIdReference` targets), when `xacmlPolicy` is not a source. */
  references?: readonly string[];
  /** Service type in the 403 detail and `org:gateway:action:service`. Default `gw`. */
  serviceType?: string;
  /** Service (API) name. Default: `req.gateway.api.name`. */
  serviceName?: string;
  /** Service version. Default: `req.gateway.api.version`. */
  serviceVersion?: string | number;
  /** Provider type. Default `gw`. */
  providerType?: string;
  /** Providing subject. Default: `req.gateway.api.provider`. */
  providerName?: string;
  /**
   * The operation name (`action-id`). Default: `req.gateway.api.operation` when set, else
   * `<METHOD> <path>` with the path below the API (`req.gateway.api.resourcePath`) or `req.path`.
   */
  operation?: (req: R) => string;
  /**
   * The caller's organization, client, credential, roles, per request; what it gives overrides
   * the registered application and the token. Decisions on those attributes are then evaluated
   * on every request (nothing tells which requests give the same values).
   */
  subject?: (req: R) => XacmlSubjectInfo | undefined;
  /**
   * The registry of client applications: client id (the token's `azp`, else `client_id`) →
   * application name (`org:gateway:subject:client`), consuming organization
   * (`org:gateway:subject:organization`) and roles (`org:gateway:subject:role`, in place of the
   * token's when given). A client not in it keeps the token's values (client id, roles) and has no
   * organization. Checked and copied now: later changes to the object are not seen.
   */
  applications?: ClientApplications | ApplicationRegistry;
  /** Usage profile (`org:gateway:action:protocol`). Default `rest`. */
  protocol?: string;
  /** Header names left out of the XACML request besides `authorization` (always left out). */
  excludeHeaders?: readonly string[];
  /** Handlers by obligation id. A Permit with an obligation that has no handler is treated as Deny. */
  obligations?: Readonly<Record<string, XacmlObligationHandler<R>>>;
  /**
   * Called with the XACML request context of each invocation before it is evaluated, to log or
   * archive it (for example as XML with `toRequestXml`). It never contains the token. The hook
   * gets the full request (every attribute of `buildXacmlRequest`), and that is what is then
   * evaluated; without a hook only the attributes the compiled policy references are built
   * (unless it uses an `AttributeSelector` or an XPath function), which decides the same.
   */
  onRequest?: (request: RequestContext, req: R) => void;
  /**
   * Which decisions keep the XACML request's attributes for the transaction record (token left
   * out, credential-bearing headers redacted), so that the configuration console can replay them
   * against a draft policy: `denied` (the default) for those that are not a Permit, `all` for every
   * decision, Permits included (so that a draft turning a Permit into a Deny shows too), at the cost
   * of copying the request of every permitted call.
   */
  recordRequests?: 'denied' | 'all';
}

/** What {@link xacmlAuthorize} works with, its options checked (at factory time). */
export interface AuthorizeSettings<R extends IncomingMessage> {
  readonly source: XacmlPolicySource;
  readonly serviceType: string;
  readonly serviceName: string | undefined;
  readonly serviceVersion: string | number | undefined;
  readonly providerType: string;
  readonly providerName: string | undefined;
  readonly protocol: string;
  readonly operation: ((req: R) => string) | undefined;
  readonly subject: ((req: R) => XacmlSubjectInfo | undefined) | undefined;
  readonly onRequest: ((request: RequestContext, req: R) => void) | undefined;
  readonly applications: ApplicationRegistry | undefined;
  readonly obligations: Readonly<Record<string, XacmlObligationHandler<R>>>;
  readonly excluded: ReturnType<typeof excludedHeaders>;
  readonly recordRequests: 'denied' | 'all';
}

const XACML_AUTHORIZE_KEYS = optionKeys<XacmlAuthorizeOptions>({
  xacmlPolicy: true,
  policy: true,
  references: true,
  serviceType: true,
  serviceName: true,
  serviceVersion: true,
  providerType: true,
  providerName: true,
  operation: true,
  subject: true,
  applications: true,
  protocol: true,
  excludeHeaders: true,
  obligations: true,
  onRequest: true,
  recordRequests: true,
  attributeFinder: true,
  resourceChildren: true,
  now: true,
  limits: true,
  maxXPathAttributes: true,
});

/** Checks the options of {@link xacmlAuthorize}, throwing `InvalidOptionError` that names the option. */
export function authorizeSettings<R extends IncomingMessage>(options: XacmlAuthorizeOptions<R>): AuthorizeSettings<R> {
  const check: OptionChecks = optionChecks('xacmlAuthorize');
  const {
    xacmlPolicy,
    policy: deprecatedPolicy,
    references,
    serviceType: serviceTypeOption,
    serviceName,
    serviceVersion,
    providerType: providerTypeOption,
    providerName,
    operation: operationOption,
    subject: subjectOption,
    applications: applicationsOption,
    protocol: protocolOption,
    excludeHeaders,
    obligations: obligationsOption,
    onRequest: onRequestOption,
    recordRequests: recordRequestsOption,
    ...evaluatorOptions
  } = check.known(check.object<XacmlAuthorizeOptions<R>>(options, ''), '', XACML_AUTHORIZE_KEYS);
  const recordRequests = check.oneOf(recordRequestsOption, 'recordRequests', ['denied', 'all'] as const, 'denied');
  if (xacmlPolicy !== undefined && deprecatedPolicy !== undefined)
    check.fail('policy', 'is the deprecated name of xacmlPolicy: give one of them, not both');
  const policy = xacmlPolicy ?? deprecatedPolicy;
  if (policy === undefined) check.fail('xacmlPolicy', 'is required');
  const path = typeof policy === 'function' || policy instanceof XacmlPolicySource ? undefined : filePathOf(policy);
  if (path !== undefined) check.fail(xacmlPolicy === undefined ? 'policy' : 'xacmlPolicy', filePathHint(path));
  const serviceType = check.string(serviceTypeOption, 'serviceType', 'gw');
  const providerType = check.string(providerTypeOption, 'providerType', 'gw');
  const protocol = check.string(protocolOption, 'protocol', 'rest');
  if (serviceName !== undefined) check.string(serviceName, 'serviceName');
  if (providerName !== undefined) check.string(providerName, 'providerName');
  if (serviceVersion !== undefined && typeof serviceVersion !== 'number')
    check.string(serviceVersion, 'serviceVersion', undefined, undefined, 'a string or a number');
  const operation = check.optionalFunction<(req: R) => string>(operationOption, 'operation');
  const subject = check.optionalFunction<(req: R) => XacmlSubjectInfo | undefined>(subjectOption, 'subject');
  const onRequest = check.optionalFunction<(request: RequestContext, req: R) => void>(onRequestOption, 'onRequest');
  const applications =
    applicationsOption === undefined ? undefined : ApplicationRegistry.checked(applicationsOption, 'applications', check);
  if (excludeHeaders !== undefined && (!Array.isArray(excludeHeaders) || excludeHeaders.some((h) => typeof h !== 'string' || h === ''))) {
    check.fail('excludeHeaders', 'must be an array of header names');
  }
  const obligations = check.object<Readonly<Record<string, XacmlObligationHandler<R>>>>(obligationsOption, 'obligations', {});
  for (const [id, handler] of Object.entries(obligations)) {
    if (typeof handler !== 'function')
      check.fail(`obligations[${JSON.stringify(id)}]`, 'must be a function (obligation ids map to handlers)');
  }
  if (!(policy instanceof XacmlPolicySource)) checkEvaluatorOptions(check, evaluatorOptions);
  const source =
    policy instanceof XacmlPolicySource
      ? policy
      : new XacmlPolicySource({ ...evaluatorOptions, policy, ...(references === undefined ? {} : { references }) });
  const excluded = excludedHeaders(excludeHeaders === undefined ? {} : { excludeHeaders });
  return {
    source,
    serviceType,
    serviceName,
    serviceVersion,
    providerType,
    providerName,
    protocol,
    operation,
    subject,
    onRequest,
    applications,
    obligations,
    excluded,
    recordRequests,
  };
}
