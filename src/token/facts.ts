/**
 * The facts of the request's token that every later step derives from a validated token: who
 * issued it, to whom (subject, username, client id), for what (audience, scopes, roles), when
 * (expiry, issue, not-before times, `jti`) and the user information. The forwarder's
 * `Gateway-Token-*` headers, the XACML request's token attributes and the record's sender section
 * all read them here, so that they cannot disagree.
 *
 * @module
 */
import type { TokenContext, TokenInfo } from '../context.js';
import { deepFreeze } from './validated-data.js';
import { toTokenInfo, type Claims } from './normalize.js';

/**
 * The normalized facts of a token: {@link TokenInfo} (`issuer`, `subject`, `username`, `clientId`
 * = `azp` else `client_id`, `audience[]`, `scopes[]`, `roles[]`, `expiresAt`, `issuedAt`,
 * `notBefore`, `jti`, `userInfo`). Read-only: it may be the token policy's cached, frozen result.
 */
export type TokenFacts = Readonly<TokenInfo>;

/** The facts of no token (or of a token without claims): shared, frozen. */
const NO_FACTS: TokenFacts = deepFreeze(toTokenInfo({}));

/**
 * The token's facts: `token.info` as the validating middleware (`introspect`) set it, which is the
 * policy's shared result, at no cost; otherwise (a custom validator that stored only claims) the
 * same normalization applied to the claims on the context (introspection wins over the JWT, user
 * information from UserInfo when it was called). No token, or no claims: empty facts (empty
 * arrays, no optional field).
 *
 * @example
 * ```ts
 * const { subject, clientId, issuer } = tokenFacts(req.gateway?.token);
 * ```
 */
export function tokenFacts(token: TokenContext | undefined): TokenFacts {
  if (token === undefined) return NO_FACTS;
  if (token.info !== undefined) return token.info;
  if (token.introspection === undefined && token.jwt === undefined && token.userInfo === undefined) return NO_FACTS;
  const sources: { introspection?: Claims; jwt?: Claims; userInfo?: Claims } = {};
  if (token.introspection !== undefined) sources.introspection = token.introspection;
  if (token.jwt !== undefined) sources.jwt = token.jwt;
  if (token.userInfo !== undefined) sources.userInfo = token.userInfo;
  return toTokenInfo(sources);
}
