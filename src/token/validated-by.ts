/**
 * Which token policy validated a request's token: `introspect` notes it, so that a refusal raised
 * later on the same token (step-up authentication) is challenged as the policy's own refusals are
 * (its DPoP challenge) and judges the token's times with the policy's clock tolerance. Kept beside
 * the request, never on `req.gateway` (the policy is not request state a host should see or copy).
 *
 * @module
 */
import type { IncomingMessage } from 'node:http';
import type { TokenPolicy } from './policy.js';

const policies = new WeakMap<IncomingMessage, TokenPolicy>();

/** Notes that `policy` validated the token of `req`.  @internal */
export function noteValidatingPolicy(req: IncomingMessage, policy: TokenPolicy): void {
  policies.set(req, policy);
}

/** The token policy that validated the token of `req`, when `introspect` did.  @internal */
export function validatingPolicy(req: IncomingMessage): TokenPolicy | undefined {
  return policies.get(req);
}
