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

/** A validator that left claims but no normalized info: the same members, read from the claims. */
function infoOf(claims: Readonly<Record<string, unknown>> | undefined): TokenFacts {
  return {
    clientId: stringClaim(claims, 'azp') ?? stringClaim(claims, 'client_id'),
    subject: stringClaim(claims, 'sub'),
    issuer: stringClaim(claims, 'iss'),
  };
}

type TokenFacts = Pick<TrafficFacts, 'clientId' | 'subject' | 'issuer'>;

/**
 * The facts of one request, each read when a policy's grouping first asks for it: a policy by
 * client id reads neither the claims nor the client's address (`trustProxy` walked).
 */
class RequestFacts implements TrafficFacts {
  readonly #req: IncomingMessage;
  readonly #context: GatewayContext;
  readonly #clientAddressOf: (req: IncomingMessage) => string | undefined;
  readonly #fallbackApi: string;
  readonly #override: TrafficFactsOverride | undefined;
  #claims: Readonly<Record<string, unknown>> | undefined | null = null;
  #info: TokenFacts | undefined;

  constructor(
    req: IncomingMessage,
    context: GatewayContext,
    clientAddressOf: (req: IncomingMessage) => string | undefined,
    fallbackApi: string,
    override: TrafficFactsOverride | undefined,
  ) {
    this.#req = req;
    this.#context = context;
    this.#clientAddressOf = clientAddressOf;
    this.#fallbackApi = fallbackApi;
    this.#override = override;
  }

  get api(): string {
    return this.#override?.api ?? apiOf(this.#context) ?? this.#fallbackApi;
  }

  get operation(): string | undefined {
    return this.#override?.operation ?? this.#context.api?.operation;
  }

  get clientId(): string | undefined {
    return this.#override?.clientId ?? this.#token().clientId;
  }

  get subject(): string | undefined {
    return this.#override?.subject ?? this.#token().subject;
  }

  get issuer(): string | undefined {
    return this.#override?.issuer ?? this.#token().issuer;
  }

  get clientAddress(): string | undefined {
    return this.#override?.clientAddress ?? this.#clientAddressOf(this.#req);
  }

  get claims(): Readonly<Record<string, unknown>> | undefined {
    if (this.#claims === null) this.#claims = this.#override?.claims ?? claimsOf(this.#context);
    return this.#claims;
  }

  header(name: string): string | undefined {
    return requestHeader(this.#req, name);
  }

  #token(): TokenFacts {
    return (this.#info ??= this.#context.token?.info ?? infoOf(this.claims));
  }
}

/**
 * The facts of a request (see the module comment); `override` wins over the context.
 * `clientAddressOf` is asked only when a policy groups by the client's address.
 */
export function factsOf(
  req: IncomingMessage,
  context: GatewayContext,
  clientAddressOf: (req: IncomingMessage) => string | undefined,
  fallbackApi: string,
  override: TrafficFactsOverride | undefined,
): TrafficFacts {
  return new RequestFacts(req, context, clientAddressOf, fallbackApi, override);
}
