/**
 * `xacmlAuthorize`: the XACML policy enforcement point of the gateway (docs/gateway.md,
 * "What a request goes through", step 5).
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request } from 'express';
import { addDiagnostic } from '../../context.js';
import { GatewayError } from '../../errors.js';
import type { XacmlPolicySource, XacmlPolicyState } from '../policy-source.js';
// eslint-disable-next-line @typescript-eslint/no-unused-vars -- imported for the {@link} of the documentation below
import type { buildXacmlRequest } from '../request-builder.js';
import { Authorizer } from './authorizer.js';
import { authorizeSettings, type XacmlAuthorizeOptions } from './options.js';

export type { XacmlAuthorizeOptions, XacmlObligationHandler } from './options.js';

/** The middleware returned by {@link xacmlAuthorize}, with the controls of its policy. */
export interface XacmlAuthorizeMiddleware<R extends IncomingMessage = Request> {
  /** Decides the request; calls `next()` on Permit, else `next(error)`. */
  (req: R, res: ServerResponse, next: (err?: unknown) => void): void;
  /** The policy source this middleware evaluates. */
  readonly policySource: XacmlPolicySource;
  /** Marks the policy stale: the next request loads it again (call it on ResetAllCaches). */
  reset(): void;
  /** Loads and compiles the policy now; rejects (keeping the previous one) when it is invalid. */
  reload(): Promise<XacmlPolicyState>;
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
export function xacmlAuthorize<R extends IncomingMessage = Request>(options: XacmlAuthorizeOptions<R>): XacmlAuthorizeMiddleware<R> {
  const settings = authorizeSettings(options);
  const { source } = settings;
  const authorizer = new Authorizer(settings);

  function run(req: R, next: (err?: unknown) => void, state: XacmlPolicyState): void {
    let error: GatewayError | undefined;
    try {
      error = authorizer.decide(req, state);
    } catch (cause) {
      // An evaluator or resolver failure must never let the request through.
      next(new GatewayError('ERR_INTERNAL', { diagnostic: `XACML evaluation failed: ${errorMessage(cause)}`, cause }));
      return;
    }
    next(error);
  }

  const middleware = function xacmlAuthorizeMiddleware(req: R, _res: ServerResponse, next: (err?: unknown) => void): void {
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
  } as XacmlAuthorizeMiddleware<R>;
  Object.defineProperties(middleware, {
    policySource: { value: source, enumerable: true },
    reset: { value: () => source.reset(), enumerable: true },
    reload: { value: () => source.reload(), enumerable: true },
  });
  return middleware;
}

function errorMessage(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}
