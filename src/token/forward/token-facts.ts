/**
 * The normalized facts of the request's token, whichever validation step produced them.
 *
 * @module
 */
import type { TokenContext, TokenInfo, UserInfo } from '../../context.js';

/**
 * Returns the token's normalized information: `token.info` when the validating middleware set it,
 * otherwise the same fields derived from the claims (JWT, then introspection, then UserInfo), so
 * forwarding and authorization also work after a custom validator that only stores claims.
 * `clientId` is `azp` when present, else `client_id`; `audience` and `scopes` are always arrays.
 */
export function tokenFacts(token: TokenContext | undefined): TokenInfo {
  if (token?.info !== undefined) return token.info;
  const claims: Record<string, unknown> = { ...token?.userInfo, ...token?.introspection, ...token?.jwt };
  const info: TokenInfo = {
    audience: strings(claims.aud),
    scopes: typeof claims.scope === 'string' ? claims.scope.split(' ').filter(Boolean) : strings(claims.scope ?? claims.scp),
    roles: strings(claims.roles ?? (claims.realm_access as { roles?: unknown } | undefined)?.roles ?? claims.groups),
    userInfo: userInfoOf(token?.userInfo ?? {}),
  };
  const issuer = text(claims.iss);
  if (issuer !== undefined) info.issuer = issuer;
  const subject = text(claims.sub);
  if (subject !== undefined) info.subject = subject;
  const username = text(claims.username ?? claims.preferred_username);
  if (username !== undefined) info.username = username;
  const clientId = text(claims.azp ?? claims.client_id);
  if (clientId !== undefined) info.clientId = clientId;
  if (typeof claims.exp === 'number') info.expiresAt = claims.exp;
  if (typeof claims.iat === 'number') info.issuedAt = claims.iat;
  if (typeof claims.nbf === 'number') info.notBefore = claims.nbf;
  const jti = text(claims.jti);
  if (jti !== undefined) info.jti = jti;
  return info;
}

function userInfoOf(claims: Record<string, unknown>): UserInfo {
  const info: UserInfo = {};
  const fullName = text(claims.name);
  if (fullName !== undefined) info.fullName = fullName;
  const firstName = text(claims.given_name);
  if (firstName !== undefined) info.firstName = firstName;
  const middleName = text(claims.middle_name);
  if (middleName !== undefined) info.middleName = middleName;
  const familyName = text(claims.family_name);
  if (familyName !== undefined) info.familyName = familyName;
  const eMail = text(claims.email);
  if (eMail !== undefined) info.eMail = eMail;
  return info;
}

function text(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return undefined;
}

function strings(value: unknown): string[] {
  if (Array.isArray(value)) return value.map(text).filter((v): v is string => v !== undefined);
  const single = text(value);
  return single === undefined ? [] : [single];
}
