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

/** A claim that may be a space-separated string (`scope`, RFC 6749 3.3) or an array of strings, as an array. */
function spaceSeparated(value: unknown): string[] {
  if (typeof value === 'string') return value.split(/\s+/).filter((v) => v !== '');
  return strings(value);
}

/** A claim that may be one string or an array of strings (`aud`, RFC 7519 4.1.3): a string is one value, spaces and all. */
function values(value: unknown): string[] {
  if (typeof value === 'string') return value === '' ? [] : [value];
  return strings(value);
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string' && v !== '') : [];
}

function roles(claims: Claims): string[] {
  const found = new Set<string>([...values(claims['roles']), ...values(claims['groups'])]);
  const realmAccess = claims['realm_access'];
  if (typeof realmAccess === 'object' && realmAccess !== null) {
    for (const role of values((realmAccess as Claims)['roles'])) found.add(role);
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
 * the token claims. `issuer` is the claims' `iss`, else `defaultIssuer` (the issuer of the policy
 * that validated the token: `iss` is optional in an introspection answer, RFC 7662 2.2).
 */
export function toTokenInfo(sources: { introspection?: Claims; jwt?: Claims; userInfo?: Claims }, defaultIssuer?: string): TokenInfo {
  const claims: Claims = { ...sources.userInfo, ...sources.jwt, ...sources.introspection };
  const info: TokenInfo = {
    audience: values(claims['aud']),
    scopes: spaceSeparated(claims['scope'] ?? claims['scp']),
    roles: roles(claims),
    userInfo: userInfoOf(sources.userInfo ?? claims),
  };
  const set = <K extends keyof TokenInfo>(key: K, value: TokenInfo[K] | undefined) => {
    if (value !== undefined) info[key] = value;
  };
  set('issuer', str(claims['iss']) ?? str(defaultIssuer));
  set('subject', str(claims['sub']));
  set('username', str(claims['username']) ?? str(claims['preferred_username']));
  set('clientId', str(claims['azp']) ?? str(claims['client_id']));
  set('expiresAt', num(claims['exp']));
  set('issuedAt', num(claims['iat']));
  set('notBefore', num(claims['nbf']));
  set('jti', str(claims['jti']));
  return info;
}
