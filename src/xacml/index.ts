/**
 * `express-access-gateway/xacml`: a pure XACML 2.0 policy decision point (no Express).
 *
 * @example
 * ```ts
 * import { createPdp, parseRequest, toResponseXml } from 'express-access-gateway/xacml';
 * const pdp = createPdp({ policies: [policyXml] });
 * const response = pdp.evaluate(parseRequest(requestXml));
 * console.log(response.results[0]?.decision, toResponseXml(response));
 * ```
 *
 * @packageDocumentation
 */
export { createPdp } from './pdp.js';
export type {
  Pdp,
  PdpOptions,
  AttributeFinder,
  AttributeDesignatorReference,
  AttributeReferences,
  AttributeSelectedReference,
} from './pdp.js';
export type { XacmlExplanation, XacmlExplanationStep, XacmlExplanationFailure, XacmlElementKind } from './explain.js';
export { DEFAULT_MAX_XPATH_ATTRIBUTES } from './xpath.js';
export { parseRequest } from './request.js';
export { toResponseXml } from './response.js';
export { toRequestXml } from './request-xml.js';
export type { XacmlDecision, XacmlResponse, XacmlResult, XacmlObligation } from './response.js';
export { XacmlSyntaxError, XacmlProcessingError } from './errors.js';
export type { XacmlErrorCode } from './errors.js';
export type { XmlLimits } from './xml.js';
export { DEFAULT_MAX_DEPTH, DEFAULT_MAX_SIZE } from './xml.js';
export { ACCESS_SUBJECT, XS_STRING } from './request-context.js';
export type { RequestContext, RequestAttribute, RequestSubject, RequestResource } from './request-context.js';
