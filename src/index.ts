/**
 * express-access-gateway: composable Express middleware for an access-control gateway.
 *
 * @packageDocumentation
 */
export * from './errors.js';
export type * from './context.js';
export { gatewayContext, addDiagnostic } from './context.js';
export * from './record/index.js';
export { requireToken, type RequireTokenOptions, type TokenMiddleware } from './token/require-token.js';
export { introspect, type IntrospectOptions } from './token/introspect.js';
export {
  TokenPolicy,
  createTokenPolicy,
  type TokenPolicyOptions,
  type TokenValidation,
  type ClientAuthMethod,
  type ClientPrivateKey,
  type AuthorizationServerMetadata,
} from './token/policy.js';
export { problemJsonErrorHandler, type ProblemJsonErrorHandlerOptions, type ErrorHandler } from './problem/handler.js';
export { sendProblem, renderProblem, bearerChallenge, type ProblemOptions, type ProblemBody, type RenderedProblem } from './problem/render.js';
export * from './gateway/index.js';
export * from './server/index.js';
export * from './authorize/index.js';
export * from './token/forward/index.js';
