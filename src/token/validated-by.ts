/**
 * Which token policy validated a request's token: `introspect` notes it on the token's context, so
 * that a refusal raised later on the same token (step-up authentication) is challenged as the
 * policy's own refusals are (its DPoP challenge) and judges the token's times with the policy's
 * clock tolerance. Under a symbol: not request state a host should see, copy or serialize.
 *
 * @module
 */
import type { TokenContext } from '../context.js';
import type { TokenPolicy } from './policy.js';

const VALIDATED_BY = Symbol('express-access-gateway.validatedBy');

type Noted = TokenContext & { [VALIDATED_BY]?: TokenPolicy };

/** Notes that `policy` validated `token`.  @internal */
export function noteValidatingPolicy(token: TokenContext, policy: TokenPolicy): void {
  (token as Noted)[VALIDATED_BY] = policy;
}

/** The token policy that validated `token`, when `introspect` did.  @internal */
export function validatingPolicy(token: TokenContext | undefined): TokenPolicy | undefined {
  return (token as Noted | undefined)?.[VALIDATED_BY];
}
