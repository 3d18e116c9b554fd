/**
 * The normalized facts of the request's token, whichever validation step produced them.
 *
 * @module
 */
import type { TokenContext, TokenInfo } from '../../context.js';
import { toTokenInfo } from '../normalize.js';

/**
 * Returns the token's normalized information: `token.info` when the validating middleware set it,
 * otherwise the same normalization (`toTokenInfo`) applied to the stored claims, so forwarding and
 * authorization also work after a custom validator that only stores claims. `clientId` is `azp`
 * when present, else `client_id`; `audience` and `scopes` are always arrays.
 */
export function tokenFacts(token: TokenContext | undefined): TokenInfo {
  if (token?.info !== undefined) return token.info;
  const sources: Parameters<typeof toTokenInfo>[0] = {};
  if (token?.introspection !== undefined) sources.introspection = token.introspection;
  if (token?.jwt !== undefined) sources.jwt = token.jwt;
  if (token?.userInfo !== undefined) sources.userInfo = token.userInfo;
  return toTokenInfo(sources);
}
