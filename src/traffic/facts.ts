/**
 * A request's {@link TrafficFacts} from what the gateway's own middleware left on `req.gateway`
 * (the API and operation, the token's client, subject, issuer and claims), the client's address
 * and the request's headers. Claims are merged only when a policy reads one.
 *
 * @module
 */
import type { IncomingMessage } from 'node:http';
import type { GatewayContext } from '../context.js';
import type { TrafficFacts } from './types.js';

/** What a host may say of a request instead of the gateway's context (its own token validation). */
export type TrafficFactsOverride = Partial<Omit<TrafficFacts, 'header'>>;

/** The API's key, `provider/name/vN`, of the context's API. */
function apiOf(context: GatewayContext): string | undefined {
  const api = context.api;
  return api === undefined ? undefined : `${api.provider}/${api.name}/v${api.version}`;
}

/** The token's claims: introspection's over the JWT's over UserInfo's (as the token's facts are read). */
function claimsOf(context: GatewayContext): Readonly<Record<string, unknown>> | undefined {
  const token = context.token;
  if (token === undefined) return undefined;
  const { introspection, jwt, userInfo } = token;
  if (introspection === undefined && jwt === undefined && userInfo === undefined) return undefined;
  return { ...userInfo, ...jwt, ...introspection };
}

function stringClaim(claims: Readonly<Record<string, unknown>> | undefined, name: string): string | undefined {
  const value = claims !== undefined && Object.hasOwn(claims, name) ? claims[name] : undefined;
  return typeof value === 'string' ? value : undefined;
}

/** The value of a request header for `header:<name>`: several joined by `, `. */
export function requestHeader(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/** The facts of a request (see the module comment); `override` wins over the context. */
export function factsOf(
  req: IncomingMessage,
  context: GatewayContext,
  clientAddress: string | undefined,
  fallbackApi: string,
  override: TrafficFactsOverride | undefined,
): TrafficFacts {
  let claims: Readonly<Record<string, unknown>> | undefined | null = null;
  const readClaims = () => {
    if (claims === null) claims = override?.claims ?? claimsOf(context);
    return claims;
  };
  // A validator that left claims but no normalized info: the same members, read from the claims.
  const info = context.token?.info ?? {
    clientId: stringClaim(readClaims(), 'azp') ?? stringClaim(readClaims(), 'client_id'),
    subject: stringClaim(readClaims(), 'sub'),
    issuer: stringClaim(readClaims(), 'iss'),
  };
  return {
    api: override?.api ?? apiOf(context) ?? fallbackApi,
    operation: override?.operation ?? context.api?.operation,
    clientId: override?.clientId ?? info.clientId,
    subject: override?.subject ?? info.subject,
    issuer: override?.issuer ?? info.issuer,
    clientAddress: override?.clientAddress ?? clientAddress,
    get claims() {
      return readClaims();
    },
    header: (name) => requestHeader(req, name),
  };
}
