/**
 * `xacmlAuthorize`: the XACML policy enforcement point of the gateway (spec 4.2 step 3).
 *
 * @module
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { addDiagnostic, gatewayContext } from '../context.js';
import type { ApiContext, AuthorizationContext, GatewayContext, TokenContext } from '../context.js';
import { GatewayError } from '../errors.js';
import { logger } from '../log.js';
import { optionChecks, type OptionChecks } from '../options.js';
import { decisionText } from './decision.js';
import { DecisionMemo, decisionKeyPlan, keyPart, type DecisionKeyPlan } from './decision-memo.js';
import { ApplicationRegistry, type ClientApplications } from './applications.js';
import { checkEvaluatorOptions, XacmlPolicySource } from './policy-source.js';
import type { XacmlEvaluatorOptions, XacmlPolicyDocuments, XacmlPolicyLoader, XacmlPolicyState } from './policy-source.js';
import { assembleXacmlRequest, attributeSelection, excludedHeaders, tokenAttributes } from './request-builder.js';
import type { AttributeSelection } from './request-builder.js';
// `buildXacmlRequest` is imported for the {@link} of the documentation below.
import type { buildXacmlRequest, TokenAttributes, XacmlInvocation, XacmlSubjectInfo } from './request-builder.js';
import { deepFreeze, memoPerToken, sharedTokenData } from '../token/shared.js';
import type { RequestContext } from '../xacml/request-context.js';
import type { Pdp, XacmlObligation, XacmlResponse } from '../xacml/index.js';

const log = logger('authorize');


/**
 * Fulfils one obligation for a request. Return `false` (or throw) when it cannot be fulfilled:
 * a Permit whose obligations are not all fulfilled is treated as Deny (XACML 2.0 section 7.14).
 */
export type XacmlObligationHandler = (obligation: XacmlObligation, req: Request) => boolean | void;

/** Options of {@link xacmlAuthorize}. */
export interface XacmlAuthorizeOptions extends XacmlEvaluatorOptions {
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
  operation?: (req: Request) => string;
  /**
   * The caller's organization, client, credential, roles, per request; what it gives overrides
   * the registered application and the token. Decisions on those attributes are then evaluated
   * on every request (nothing tells which requests give the same values).
   */
  subject?: (req: Request) => XacmlSubjectInfo | undefined;
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
  obligations?: Readonly<Record<string, XacmlObligationHandler>>;
  /**
   * Called with the XACML request context of each invocation before it is evaluated, to log or
   * archive it (for example as XML with `toRequestXml`). It never contains the token. The hook
   * gets the full request (every attribute of `buildXacmlRequest`), and that is what is then
   * evaluated; without a hook only the attributes the compiled policy references are built
   * (unless it uses an `AttributeSelector` or an XPath function), which decides the same.
   */
  onRequest?: (request: RequestContext, req: Request) => void;
}

/** What `xacmlAuthorize` derives from one compiled policy. */
interface PolicyPlan {
  /** The attributes to build (all of them when `undefined`). */
  readonly selection: AttributeSelection | undefined;
  /** What a decision depends on besides the token, when decisions can be reused. */
  readonly key: DecisionKeyPlan | undefined;
}

/** One evaluation's outcome, deeply frozen: reused for every request with the same token and key. */
interface Decided {
  readonly response: XacmlResponse;
  /** Every result is Permit (obligations still to fulfil, per request). */
  readonly permitted: boolean;
  readonly authorization: AuthorizationContext;
  /** The diagnostic of a denial (the decision text with each result's status). */
  readonly denial: string;
}

/** The names of the 403's detail. */
interface DenialNames {
  serviceType: string;
  serviceName: string;
  serviceVersion: string | number;
  providerType: string;
  providerName: string;
}

/** The middleware returned by {@link xacmlAuthorize}, with the controls of its policy. */
export interface XacmlAuthorizeMiddleware extends RequestHandler {
  /** The policy source this middleware evaluates. */
  readonly policySource: XacmlPolicySource;
  /** Marks the policy stale: the next request loads it again (call it on ResetAllCaches). */
  reset(): void;
  /** Loads and compiles the policy now; rejects (keeping the previous one) when it is invalid. */
  reload(): Promise<XacmlPolicyState>;
}

/** What {@link xacmlAuthorize} works with, its options checked (at factory time). */
interface AuthorizeSettings {
  readonly source: XacmlPolicySource;
  readonly serviceType: string;
  readonly serviceName: string | undefined;
  readonly serviceVersion: string | number | undefined;
  readonly providerType: string;
  readonly providerName: string | undefined;
  readonly protocol: string;
  readonly operation: ((req: Request) => string) | undefined;
  readonly subject: ((req: Request) => XacmlSubjectInfo | undefined) | undefined;
  readonly onRequest: ((request: RequestContext, req: Request) => void) | undefined;
  readonly applications: ApplicationRegistry | undefined;
  readonly obligations: Readonly<Record<string, XacmlObligationHandler>>;
  readonly excluded: ReturnType<typeof excludedHeaders>;
}

/** Checks the options of {@link xacmlAuthorize}, throwing `InvalidOptionError` that names the option. */
function authorizeSettings(options: XacmlAuthorizeOptions): AuthorizeSettings {
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
    ...evaluatorOptions
  } = check.object<XacmlAuthorizeOptions>(options, '');
  if (xacmlPolicy !== undefined && deprecatedPolicy !== undefined) check.fail('policy', 'is the deprecated name of xacmlPolicy: give one of them, not both');
  const policy = xacmlPolicy ?? deprecatedPolicy;
  if (policy === undefined) check.fail('xacmlPolicy', 'is required');
  const serviceType = check.string(serviceTypeOption, 'serviceType', 'gw');
  const providerType = check.string(providerTypeOption, 'providerType', 'gw');
  const protocol = check.string(protocolOption, 'protocol', 'rest');
  if (serviceName !== undefined) check.string(serviceName, 'serviceName');
  if (providerName !== undefined) check.string(providerName, 'providerName');
  if (serviceVersion !== undefined && typeof serviceVersion !== 'number') check.string(serviceVersion, 'serviceVersion', undefined, undefined, 'a string or a number');
  const operation = check.optionalFunction<(req: Request) => string>(operationOption, 'operation');
  const subject = check.optionalFunction<(req: Request) => XacmlSubjectInfo | undefined>(subjectOption, 'subject');
  const onRequest = check.optionalFunction<(request: RequestContext, req: Request) => void>(onRequestOption, 'onRequest');
  const applications = applicationsOption === undefined ? undefined : ApplicationRegistry.checked(applicationsOption, 'applications', check);
  if (excludeHeaders !== undefined && (!Array.isArray(excludeHeaders) || excludeHeaders.some((h) => typeof h !== 'string' || h === ''))) {
    check.fail('excludeHeaders', 'must be an array of header names');
  }
  const obligations = check.object<Readonly<Record<string, XacmlObligationHandler>>>(obligationsOption, 'obligations', {});
  for (const [id, handler] of Object.entries(obligations)) {
    if (typeof handler !== 'function') check.fail(`obligations[${JSON.stringify(id)}]`, 'must be a function (obligation ids map to handlers)');
  }
  if (!(policy instanceof XacmlPolicySource)) checkEvaluatorOptions(check, evaluatorOptions);
  const source =
    policy instanceof XacmlPolicySource
      ? policy
      : new XacmlPolicySource({ ...evaluatorOptions, policy, ...(references === undefined ? {} : { references }) });
  const excluded = excludedHeaders(excludeHeaders === undefined ? {} : { excludeHeaders });
  return { source, serviceType, serviceName, serviceVersion, providerType, providerName, protocol, operation, subject, onRequest, applications, obligations, excluded };
}

/**
 * XACML authorization: builds the request context of the invocation (see {@link buildXacmlRequest})
 * and evaluates the policy. Only Permit passes; Deny, NotApplicable and Indeterminate answer 403
 * (`ERR_AUTHORIZATION_DENIED`, `protocol:GATEWAY-1352`) with the decision text in the detail, e.g.
 * `Il mittente non è autorizzato ad invocare il servizio gw/PetStore (versione:1) erogato da gw/Ente
 * (result-1 DENY code:urn:oasis:names:tc:xacml:1.0:status:ok)`. The decision is stored in
 * `req.gateway.authorization` and the decision text in the diagnostics.
 *
 * Put it after `introspect` (it reads `req.gateway.token`). The compiled policy is cached: call
 * the middleware's `reset()` (or `reload()`) after the policy changed. If no policy could ever be
 * loaded, requests fail closed with 500 (`ERR_INTERNAL`).
 *
 * @example
 * ```ts
 * import { readFileSync } from 'node:fs';
 * import express from 'express';
 * import { xacmlAuthorize } from 'express-access-gateway';
 *
 * const authorize = xacmlAuthorize({
 *   xacmlPolicy: readFileSync('policies/petstore.xml', 'utf8'),
 *   serviceName: 'PetStore', serviceVersion: 1, providerName: 'Ente',
 * });
 * const app = express();
 * app.use('/gateway/Ente/PetStore/v1', authorize);
 * // on ResetAllCaches:
 * authorize.reset();
 * ```
 */
export function xacmlAuthorize(options: XacmlAuthorizeOptions): XacmlAuthorizeMiddleware {
  const { source, serviceType, serviceName, serviceVersion, providerType, providerName, protocol, operation, subject, onRequest, applications, obligations, excluded } =
    authorizeSettings(options);
  // The token-derived attributes, computed once per cached token result and shared (frozen) by
  // every request with that token.
  const tokenPart = memoPerToken<TokenAttributes>((token) => deepFreeze(tokenAttributes(token)));

  // What each compiled policy can read, and what its decisions depend on besides the token
  // (one entry per policy version, collected with it).
  const plans = new WeakMap<Pdp, PolicyPlan>();

  function planOf(pdp: Pdp): PolicyPlan {
    let plan = plans.get(pdp);
    if (plan === undefined) {
      // A Pdp without references (a user's own implementation): the full request, no reuse.
      const selection = pdp.references === undefined ? undefined : attributeSelection(pdp.references);
      const reusable = onRequest === undefined && !source.hasAttributeFinder;
      plan = { selection, key: reusable ? decisionKeyPlan(selection, excluded, subject !== undefined) : undefined };
      plans.set(pdp, plan);
    }
    return plan;
  }

  // The service and provider names of a request: the options first, else the gateway's API.
  const serviceNameOf = (api: ApiContext | undefined): string => serviceName ?? api?.name ?? '';
  const providerNameOf = (api: ApiContext | undefined): string => providerName ?? api?.provider ?? '';

  /** The names of the request's invocation and of its 403. */
  function namesOf(api: ApiContext | undefined): DenialNames {
    return {
      serviceType,
      serviceName: serviceNameOf(api),
      serviceVersion: serviceVersion ?? api?.version ?? '',
      providerType,
      providerName: providerNameOf(api),
    };
  }

  /** The decision key of a request: the values of the invocation attributes the policy reads. */
  function decisionKey(req: Request, api: ApiContext | undefined, plan: DecisionKeyPlan): string {
    let key = '';
    if (plan.operation) key += keyPart(operation ? operation(req) : defaultOperation(req));
    if (plan.service) key += keyPart(serviceNameOf(api));
    if (plan.provider) key += keyPart(providerNameOf(api));
    if (plan.url) key += keyPart(invocationUrl(req));
    if (plan.target) key += keyPart(req.originalUrl ?? req.url ?? '/');
    for (const name of plan.headers) key += keyPart(req.headers[name]);
    return key;
  }

  // Decisions per compiled policy, cached token result and decision key (see decision-memo.ts).
  const memo = new DecisionMemo<Decided>();

  function decide(req: Request, state: XacmlPolicyState): GatewayError | undefined {
    const gateway = gatewayContext(req);
    if (state.reloadError) {
      addDiagnostic(req, 'error', 'XACML_POLICY_RELOAD_FAILED', `policy reload failed, version ${state.version} stays in force: ${state.reloadError.message}`);
    }
    const plan = planOf(state.pdp);
    const token = gateway.token;
    const keyPlan = plan.key;
    const shared = keyPlan === undefined ? undefined : sharedTokenData(token);
    let decided: Decided | undefined;
    if (keyPlan !== undefined && shared !== undefined) {
      const key = decisionKey(req, gateway.api, keyPlan);
      const raw = token?.raw;
      // A key holding the token (a header the policy reads carries it) is not remembered.
      if (raw === undefined || raw === '' || !key.includes(raw)) {
        const slot = memo.slot(state.pdp, token);
        decided = slot.get(key);
        if (decided === undefined) {
          decided = evaluate(req, gateway, state, plan);
          DecisionMemo.remember(slot, key, decided);
        }
      }
    }
    decided ??= evaluate(req, gateway, state, plan);
    gateway.authorization = decided.authorization;
    let unfulfilled: string | undefined;
    if (decided.permitted) for (const result of decided.response.results) unfulfilled ??= unfulfilledObligation(result.obligations, req);
    if (decided.permitted && unfulfilled === undefined) {
      addDiagnostic(req, 'info', 'XACML_DECISION', decided.authorization.text);
      return undefined;
    }
    const text = decided.authorization.text;
    const diagnostic = unfulfilled === undefined ? decided.denial : `${text}: obligation ${unfulfilled} not fulfilled, treated as Deny`;
    addDiagnostic(req, 'warn', 'XACML_DECISION', diagnostic);
    log('not permitted: %s', diagnostic);
    // The decision text is already a diagnostic line of its own; the error's says which policy decided.
    return new GatewayError('ERR_AUTHORIZATION_DENIED', {
      params: { ...namesOf(gateway.api), decisionText: text },
      diagnostic: `not permitted by XACML policy version ${state.version}`,
    });
  }

  /** Builds the request context of the invocation and evaluates the policy. */
  function evaluate(req: Request, gateway: GatewayContext, state: XacmlPolicyState, plan: PolicyPlan): Decided {
    const names = namesOf(gateway.api);
    const invocation: XacmlInvocation = {
      method: req.method,
      url: invocationUrl(req),
      headers: req.headers,
      operation: operation ? operation(req) : defaultOperation(req),
      service: { type: serviceType, name: names.serviceName, version: names.serviceVersion },
      provider: { type: providerType, name: names.providerName },
      protocol,
      now: new Date(),
    };
    const token = gateway.token;
    const part = tokenPart(token);
    // The registered application of the token's client, then what the `subject` option says.
    const registered = applications?.subject(part.facts.clientId);
    const own = subject?.(req);
    if (own != null) invocation.subject = registered === undefined ? own : { ...registered, ...definedOnly(own) };
    else if (registered !== undefined) invocation.subject = registered;
    let request: RequestContext;
    if (onRequest === undefined) {
      // Only the attributes the policy can read: the same decision for less work per request.
      request = assembleXacmlRequest(invocation, token?.raw, part, excluded, plan.selection);
    } else {
      // The hook sees the whole request, and the PDP decides on what the hook saw.
      request = assembleXacmlRequest(invocation, token?.raw, part, excluded);
      onRequest(request, req);
    }
    const response = state.pdp.evaluate(request);
    const first = response.results[0];
    const authorization: AuthorizationContext = {
      decision: first?.decision ?? 'Indeterminate',
      statusCode: first?.status.code ?? 'urn:oasis:names:tc:xacml:1.0:status:processing-error',
      text: decisionText(response.results),
    };
    if (first?.status.message !== undefined) authorization.statusMessage = first.status.message;
    // Frozen: shared by every request (and record) the decision is reused for.
    return deepFreeze({
      response,
      permitted: response.results.length > 0 && response.results.every((r) => r.decision === 'Permit'),
      authorization,
      denial: decisionText(response.results, true),
    });
  }

  function unfulfilledObligation(list: readonly XacmlObligation[], req: Request): string | undefined {
    for (const obligation of list) {
      if (obligation.fulfillOn !== 'Permit') continue;
      const handler = Object.hasOwn(obligations, obligation.id) ? obligations[obligation.id] : undefined;
      try {
        if (handler === undefined || handler(obligation, req) === false) return obligation.id;
      } catch {
        return obligation.id;
      }
    }
    return undefined;
  }

  function run(req: Request, next: NextFunction, state: XacmlPolicyState): void {
    let error: GatewayError | undefined;
    try {
      error = decide(req, state);
    } catch (cause) {
      // An evaluator or resolver failure must never let the request through.
      next(new GatewayError('ERR_INTERNAL', { diagnostic: `XACML evaluation failed: ${errorMessage(cause)}`, cause }));
      return;
    }
    next(error);
  }

  const middleware = function xacmlAuthorizeMiddleware(req: Request, _res: Response, next: NextFunction): void {
    let state: XacmlPolicyState | Promise<XacmlPolicyState>;
    try {
      state = source.get();
    } catch (cause) {
      next(new GatewayError('ERR_INTERNAL', { diagnostic: `XACML policy unavailable: ${errorMessage(cause)}`, cause }));
      return;
    }
    if (!(state instanceof Promise)) {
      run(req, next, state);
      return;
    }
    state.then(
      (loaded) => run(req, next, loaded),
      (cause: unknown) => {
        addDiagnostic(req, 'error', 'XACML_POLICY_UNAVAILABLE', `no XACML policy in force: ${errorMessage(cause)}`);
        next(new GatewayError('ERR_INTERNAL', { diagnostic: `XACML policy unavailable: ${errorMessage(cause)}`, cause }));
      },
    );
  } as XacmlAuthorizeMiddleware;
  Object.defineProperties(middleware, {
    policySource: { value: source, enumerable: true },
    reset: { value: () => source.reset(), enumerable: true },
    reload: { value: () => source.reload(), enumerable: true },
  });
  return middleware;
}

function defaultOperation(req: Request): string {
  const api = req.gateway?.api;
  if (api?.operation) return api.operation;
  // `req.path` is Express's; a plain Node request (the middleware also runs outside Express) has only `url`.
  return `${req.method} ${api?.resourcePath ?? req.path ?? (req.url ?? '/').split('?')[0]}`;
}

/** The URL as the sender used it: scheme (Express's `req.protocol` honours `trust proxy`), host, original path and query. */
function invocationUrl(req: Request): string {
  const protocol = req.protocol ?? ((req.socket as { encrypted?: boolean } | undefined)?.encrypted ? 'https' : 'http');
  return `${protocol}://${req.headers.host ?? 'localhost'}${req.originalUrl ?? req.url ?? '/'}`;
}

/** The fields of `info` that have a value (an `undefined` one must not hide the application's). */
function definedOnly(info: XacmlSubjectInfo): XacmlSubjectInfo {
  const out: { -readonly [K in keyof XacmlSubjectInfo]: XacmlSubjectInfo[K] } = {};
  if (info.organization !== undefined) out.organization = info.organization;
  if (info.client !== undefined) out.client = info.client;
  if (info.credential !== undefined) out.credential = info.credential;
  if (info.roles !== undefined) out.roles = info.roles;
  return out;
}

function errorMessage(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}
