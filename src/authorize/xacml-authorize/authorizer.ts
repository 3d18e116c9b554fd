/**
 * The decision of one invocation: the XACML request built from it, evaluated by the policy in
 * force, reused for requests that cannot decide differently, and the 403 of anything but Permit.
 *
 * @module
 */
import type { IncomingMessage } from 'node:http';
import { addDiagnostic, gatewayContext } from '../../context.js';
import type { ApiContext, AuthorizationContext, GatewayContext } from '../../context.js';
import { GatewayError } from '../../errors.js';
import { logger } from '../../log.js';
import { deepFreeze, memoPerToken, sharedTokenData } from '../../token/validated-data.js';
import type { RequestContext } from '../../xacml/request-context.js';
import type { Pdp, XacmlExplanation, XacmlObligation, XacmlResponse } from '../../xacml/index.js';
import { decisionText, explanationText } from '../decision.js';
import { DecisionMemo, decisionKeyPlan, keyPart, type DecisionKeyPlan } from '../decision-memo.js';
import type { XacmlPolicyState } from '../policy-source.js';
import { assembleXacmlRequest, attributeSelection, provenBinding, tokenAttributes } from '../request-builder.js';
import type { AttributeSelection, TokenAttributes, XacmlInvocation } from '../request-builder.js';
import { defaultOperation, definedOnly, invocationUrl } from './invocation.js';
import type { AuthorizeSettings } from './options.js';

const log = logger('authorize');

/** What the authorizer derives from one compiled policy. */
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

/** What one evaluation leaves for its request besides the decision: the request it built. */
interface Evaluated {
  request?: RequestContext;
  /** Whether `request` holds every attribute (no selection left any out). */
  whole?: boolean;
}

/** The names of an invocation's service and provider, as in the 403's detail. */
interface InvocationNames {
  serviceType: string;
  serviceName: string;
  serviceVersion: string | number;
  providerType: string;
  providerName: string;
}

/** Decides invocations for one `xacmlAuthorize` middleware. */
export class Authorizer<R extends IncomingMessage> {
  readonly #settings: AuthorizeSettings<R>;
  // The token-derived attributes, computed once per cached token result and shared (frozen).
  readonly #tokenPart = memoPerToken<TokenAttributes>(
    (token) => deepFreeze(tokenAttributes(token)),
    (known, token) => known.binding === provenBinding(token),
  );
  // One plan per compiled policy version, collected with it.
  readonly #plans = new WeakMap<Pdp, PolicyPlan>();
  // Decisions per compiled policy, cached token result and decision key (see decision-memo.ts).
  readonly #memo = new DecisionMemo<Decided>();

  constructor(settings: AuthorizeSettings<R>) {
    this.#settings = settings;
  }

  /** `undefined` when the invocation is permitted, else the 403 to answer. */
  decide(req: R, state: XacmlPolicyState): GatewayError | undefined {
    const gateway = gatewayContext(req);
    if (state.reloadError) {
      addDiagnostic(
        req,
        'error',
        'XACML_POLICY_RELOAD_FAILED',
        `policy reload failed, version ${state.version} stays in force: ${state.reloadError.message}`,
      );
    }
    const evaluated: Evaluated = {};
    const decided = this.#decided(req, gateway, state, evaluated);
    gateway.authorization = decided.authorization;
    let unfulfilled: string | undefined;
    if (decided.permitted)
      for (const result of decided.response.results) unfulfilled ??= this.#unfulfilledObligation(result.obligations, req);
    if (decided.permitted && unfulfilled === undefined) {
      addDiagnostic(req, 'info', 'XACML_DECISION', decided.authorization.text);
      if (this.#settings.recordRequests === 'all')
        gateway.authorization = { ...decided.authorization, request: this.#wholeRequest(req, gateway, evaluated) };
      return undefined;
    }
    const text = decided.authorization.text;
    const diagnostic = unfulfilled === undefined ? decided.denial : `${text}: obligation ${unfulfilled} not fulfilled, treated as Deny`;
    addDiagnostic(req, 'warn', 'XACML_DECISION', diagnostic);
    log('not permitted: %s', diagnostic);
    if (unfulfilled === undefined) {
      // The record's copy of the request: every attribute of this request (its own headers), the token left out.
      gateway.authorization = { ...decided.authorization, request: this.#wholeRequest(req, gateway, evaluated) };
      const explanation = decided.authorization.explanation;
      if (explanation !== undefined) addDiagnostic(req, 'info', 'XACML_DECISION', explanationText(explanation));
    }
    // The decision text is already a diagnostic line of its own; the error's says which policy decided.
    return new GatewayError('ERR_AUTHORIZATION_DENIED', {
      params: { ...this.#names(gateway.api), decisionText: text },
      diagnostic: `not permitted by XACML policy version ${state.version}`,
    });
  }

  /** The decision of a request: remembered when nothing but the token and the key can change it. */
  #decided(req: R, gateway: GatewayContext, state: XacmlPolicyState, evaluated: Evaluated): Decided {
    const plan = this.#plan(state.pdp);
    const token = gateway.token;
    if (plan.key === undefined || sharedTokenData(token) === undefined) return this.#evaluate(req, gateway, state, plan, evaluated);
    const key = this.#decisionKey(req, gateway.api, plan.key);
    const raw = token?.raw;
    // A key holding the token (a header the policy reads carries it) is not remembered.
    if (raw !== undefined && raw !== '' && key.includes(raw)) return this.#evaluate(req, gateway, state, plan, evaluated);
    const slot = this.#memo.slot(state.pdp, token);
    let decided = slot.get(key);
    if (decided === undefined) {
      decided = this.#evaluate(req, gateway, state, plan, evaluated);
      DecisionMemo.remember(token, slot, key, decided);
    }
    return decided;
  }

  #plan(pdp: Pdp): PolicyPlan {
    let plan = this.#plans.get(pdp);
    if (plan === undefined) {
      const { onRequest, source, subject, excluded } = this.#settings;
      // A Pdp without references (a user's own implementation): the full request, no reuse.
      const selection = pdp.references === undefined ? undefined : attributeSelection(pdp.references);
      const reusable = onRequest === undefined && !source.hasAttributeFinder;
      plan = { selection, key: reusable ? decisionKeyPlan(selection, excluded, subject !== undefined) : undefined };
      this.#plans.set(pdp, plan);
    }
    return plan;
  }

  /** The decision key of a request: the values of the invocation attributes the policy reads. */
  #decisionKey(req: R, api: ApiContext | undefined, plan: DecisionKeyPlan): string {
    let key = '';
    if (plan.operation) key += keyPart(this.#operation(req));
    if (plan.service) key += keyPart(this.#settings.serviceName ?? api?.name ?? '');
    if (plan.provider) key += keyPart(this.#settings.providerName ?? api?.provider ?? '');
    if (plan.url) key += keyPart(invocationUrl(req));
    if (plan.target) key += keyPart((req as { originalUrl?: string }).originalUrl ?? req.url ?? '/');
    for (const name of plan.headers) key += keyPart(req.headers[name]);
    return key;
  }

  /** Builds the request context of the invocation and evaluates the policy. */
  #evaluate(req: R, gateway: GatewayContext, state: XacmlPolicyState, plan: PolicyPlan, evaluated: Evaluated): Decided {
    const { onRequest, excluded } = this.#settings;
    const token = gateway.token;
    const part = this.#tokenPart(token);
    const invocation = this.#invocation(req, gateway, part);
    let request: RequestContext;
    if (onRequest === undefined) {
      // Only the attributes the policy can read: the same decision for less work per request.
      request = assembleXacmlRequest(invocation, token?.raw, part, excluded, plan.selection);
    } else {
      // The hook sees the whole request, and the PDP decides on what the hook saw.
      request = assembleXacmlRequest(invocation, token?.raw, part, excluded);
      onRequest(request, req);
    }
    evaluated.request = request;
    evaluated.whole = onRequest !== undefined || plan.selection === undefined;
    const response = state.pdp.evaluate(request);
    const first = response.results[0];
    const authorization: AuthorizationContext = {
      decision: first?.decision ?? 'Indeterminate',
      statusCode: first?.status.code ?? 'urn:oasis:names:tc:xacml:1.0:status:processing-error',
      text: decisionText(response.results),
    };
    if (first?.status.message !== undefined) authorization.statusMessage = first.status.message;
    const permitted = response.results.length > 0 && response.results.every((r) => r.decision === 'Permit');
    // Why not: a second, explaining evaluation, only off the Permit path.
    if (!permitted) {
      const explanation = explain(state.pdp, request);
      if (explanation !== undefined) authorization.explanation = explanation;
    }
    // Frozen: shared by every request (and record) the decision is reused for.
    return deepFreeze({
      response,
      permitted,
      authorization,
      denial: decisionText(response.results, true),
    });
  }

  /**
   * The whole XACML request of this request, for its record: the one evaluated when it holds every
   * attribute (no selection, or the `onRequest` hook's), else built again without a selection (a
   * superset of what the policy read: the same decision).
   */
  #wholeRequest(req: R, gateway: GatewayContext, evaluated: Evaluated): RequestContext {
    if (evaluated.request !== undefined && evaluated.whole === true) return evaluated.request;
    const token = gateway.token;
    const part = this.#tokenPart(token);
    return assembleXacmlRequest(this.#invocation(req, gateway, part), token?.raw, part, this.#settings.excluded);
  }

  /** The invocation's attributes, with the caller as registered and as the `subject` option says. */
  #invocation(req: R, gateway: GatewayContext, part: TokenAttributes): XacmlInvocation {
    const { serviceType, providerType, protocol, applications, subject } = this.#settings;
    const names = this.#names(gateway.api);
    const invocation: XacmlInvocation = {
      method: req.method ?? 'GET',
      url: invocationUrl(req),
      headers: req.headers,
      operation: this.#operation(req),
      service: { type: serviceType, name: names.serviceName, version: names.serviceVersion },
      provider: { type: providerType, name: names.providerName },
      protocol,
      now: new Date(),
    };
    const registered = applications?.subject(part.facts.clientId);
    const own = subject?.(req);
    if (own != null) invocation.subject = registered === undefined ? own : { ...registered, ...definedOnly(own) };
    else if (registered !== undefined) invocation.subject = registered;
    return invocation;
  }

  #operation(req: R): string {
    return this.#settings.operation ? this.#settings.operation(req) : defaultOperation(req);
  }

  /** The service and provider names of a request: the options first, else the gateway's API. */
  #names(api: ApiContext | undefined): InvocationNames {
    const { serviceType, serviceName, serviceVersion, providerType, providerName } = this.#settings;
    return {
      serviceType,
      serviceName: serviceName ?? api?.name ?? '',
      serviceVersion: serviceVersion ?? api?.version ?? '',
      providerType,
      providerName: providerName ?? api?.provider ?? '',
    };
  }

  #unfulfilledObligation(list: readonly XacmlObligation[], req: R): string | undefined {
    const { obligations } = this.#settings;
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
}

/** The explanation of a request's first result, when the PDP can explain (never throws: no explanation instead). */
function explain(pdp: Pdp, request: RequestContext): XacmlExplanation | undefined {
  if (typeof pdp.explain !== 'function') return undefined;
  try {
    return pdp.explain(request)[0];
  } catch (error) {
    log('explaining the decision failed: %s', error instanceof Error ? error.message : String(error));
    return undefined;
  }
}
