/**
 * XACML authorization of invocations: the middleware, its policy source, and the builder of the
 * XACML request of an invocation.
 *
 * @module
 */
export { xacmlAuthorize } from './xacml-authorize/index.js';
export type { XacmlAuthorizeMiddleware, XacmlAuthorizeOptions, XacmlObligationHandler } from './xacml-authorize/index.js';
export { requireScopes, InsufficientScopeError } from './scopes.js';
export type { OperationScopeRules, RequireScopesOptions, RequiredClaims, ScopeRules } from './scopes.js';
export { requireUserAuthentication, InsufficientUserAuthenticationError } from './step-up.js';
export type { OperationStepUpRules, RequireUserAuthenticationOptions, StepUpRules } from './step-up.js';
export { ApplicationRegistry, identifyApplication } from './applications.js';
export type { ClientApplication, ClientApplications, IdentifyApplicationOptions } from './applications.js';
export { XacmlPolicySource } from './policy-source.js';
export type {
  XacmlEvaluatorOptions,
  XacmlPolicyDocuments,
  XacmlPolicyLoader,
  XacmlPolicySourceOptions,
  XacmlPolicyState,
} from './policy-source.js';
export { buildXacmlRequest } from './request-builder.js';
export type { BuildXacmlRequestOptions, XacmlInvocation, XacmlSubjectInfo } from './request-builder.js';
export { toRequestXml } from '../xacml/request-xml.js';
export { XacmlAttributes } from './attributes.js';
export { decisionText } from './decision.js';
export type { DecisionResult } from './decision.js';
export type { XacmlDecision } from '../xacml/response.js';
export type { XacmlElementKind, XacmlExplanation, XacmlExplanationFailure, XacmlExplanationStep } from '../xacml/explain.js';
