/**
 * Builds the normalized {@link TokenInfo} from the claims that introspection, JWT validation and
 * UserInfo returned.
 *
 * @module
 */
import type { TokenInfo, UserInfo } from '../context.js';

/** Claims as returned by one source. */
export type Claims = Record<string, unknown>;

const str = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);
const num = (value: unknown): number | undefined => (typeof value === 'number' && Number.isFinite(value) ? value : undefined);

/** A claim that may be a string, a space-separated string or an array of strings, as an array. */
function list(value: unknown, separator: RegExp = /\s+/): string[] {
  if (typeof value === 'string') return value.split(separator).filter((v) => v !== '');
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === 'string' && v !== '');
  return [];
}

function roles(claims: Claims): string[] {
  const found = new Set<string>([...list(claims['roles']), ...list(claims['groups'])]);
  const realmAccess = claims['realm_access'];
  if (typeof realmAccess === 'object' && realmAccess !== null) {
    for (const role of list((realmAccess as Claims)['roles'])) found.add(role);
  }
  return [...found];
}

function userInfoOf(source: Claims): UserInfo {
  const info: UserInfo = {};
  const fullName = str(source['name']);
  const firstName = str(source['given_name']);
  const middleName = str(source['middle_name']);
  const familyName = str(source['family_name']);
  const eMail = str(source['email']);
  if (fullName !== undefined) info.fullName = fullName;
  if (firstName !== undefined) info.firstName = firstName;
  if (middleName !== undefined) info.middleName = middleName;
  if (familyName !== undefined) info.familyName = familyName;
  if (eMail !== undefined) info.eMail = eMail;
  return info;
}

/**
 * Normalizes the claims of a validated token. Introspection is the authority when present (its
 * claims win over the JWT's); user information comes from UserInfo when it was called, else from
 * the token claims.
 */
export function toTokenInfo(sources: { introspection?: Claims; jwt?: Claims; userInfo?: Claims }): TokenInfo {
  const claims: Claims = { ...sources.userInfo, ...sources.jwt, ...sources.introspection };
  const info: TokenInfo = {
    audience: list(claims['aud']),
    scopes: list(claims['scope'] ?? claims['scp']),
    roles: roles(claims),
    userInfo: userInfoOf(sources.userInfo ?? claims),
  };
  const set = <K extends keyof TokenInfo>(key: K, value: TokenInfo[K] | undefined) => {
    if (value !== undefined) info[key] = value;
  };
  set('issuer', str(claims['iss']));
  set('subject', str(claims['sub']));
  set('username', str(claims['username']) ?? str(claims['preferred_username']));
  set('clientId', str(claims['azp']) ?? str(claims['client_id']));
  set('expiresAt', num(claims['exp']));
  set('issuedAt', num(claims['iat']));
  set('notBefore', num(claims['nbf']));
  set('jti', str(claims['jti']));
  return info;
}
