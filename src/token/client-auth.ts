/**
 * How the gateway authenticates when it introspects (RFC 7662 section 2.1): with its client
 * credentials (`client_secret_basic`, `client_secret_post`, `private_key_jwt`), or with a bearer
 * token it obtains for itself from the same server by the client_credentials grant (`bearer`),
 * for servers that expect resource servers to introspect that way.
 *
 * @module
 */
import type { CryptoKey } from 'jose';
import * as client from 'openid-client';
import { GatewayError } from '../errors.js';
import { logger } from '../log.js';
import { classifyClientError } from './classify.js';

const log = logger('token');

/** How the gateway authenticates to the authorization server's introspection endpoint. */
export type ClientAuthMethod = 'client_secret_basic' | 'client_secret_post' | 'private_key_jwt' | 'bearer';

/** How the gateway authenticates with its own credentials (at the introspection or the token endpoint). */
export type CredentialsAuthMethod = Exclude<ClientAuthMethod, 'bearer'>;

/** A private key for `private_key_jwt`, optionally with the `kid` to put in the assertion header. */
export type ClientPrivateKey =
  | CryptoKey
  | {
      /** The private signing key (WebCrypto `CryptoKey`), for example from `jose`'s `importPKCS8`. */
      key: CryptoKey;
      /** `kid` of the client assertion's JWS header, so the server picks the matching registered key. */
      kid?: string;
    };

/** openid-client's authentication of the gateway's client with its own credentials. */
export function credentialsAuth(
  method: CredentialsAuthMethod,
  secret: string | undefined,
  privateKey: ClientPrivateKey | undefined,
): client.ClientAuth {
  switch (method) {
    case 'client_secret_post':
      return client.ClientSecretPost(secret);
    case 'private_key_jwt':
      return client.PrivateKeyJwt(privateKey as ClientPrivateKey);
    default:
      // RFC 6749 2.3.1: id and secret form-urlencoded before Base64 (docs/identity-providers.md says what that changes).
      return client.ClientSecretBasic(secret);
  }
}

// Most a token from a server that gives no `expires_in` is used before a new one is asked for.
const DEFAULT_LIFETIME_MS = 300_000;

interface HeldToken {
  readonly value: string;
  /** Epoch ms from which a new one is fetched in the background, this one still used meanwhile. */
  readonly refreshAt: number;
  /** Epoch ms from which this one is not used any more. */
  readonly usableUntil: number;
}

/**
 * The gateway's own bearer token for introspection: obtained by the client_credentials grant,
 * kept until shortly before it expires, refreshed in the background before that (once past 80%
 * of its life, or a minute before its end, whichever is later), one token request in flight at
 * a time whatever the number of introspections waiting for it.
 */
export class BearerTokenSource {
  private held: HeldToken | undefined;
  private pending: Promise<string> | undefined;

  /**
   * @param config - the configuration that authenticates the gateway at the token endpoint.
   * @param scope - the scope asked for (servers gate introspection behind one, e.g. `introspection`).
   */
  constructor(
    private readonly config: client.Configuration,
    private readonly scope: string | undefined,
    private readonly realm: string,
  ) {}

  /** A token to introspect with; rejects with the 503 `GatewayError` when none can be obtained. */
  get(): Promise<string> {
    const now = Date.now();
    const held = this.held;
    if (held !== undefined && now < held.usableUntil) {
      if (now >= held.refreshAt) this.refresh().catch(() => undefined);
      return Promise.resolve(held.value);
    }
    return this.refresh();
  }

  /** Drops the held token (the server refused it): the next introspection asks for a new one. */
  forget(): void {
    this.held = undefined;
  }

  private refresh(): Promise<string> {
    this.pending ??= this.obtain().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  private async obtain(): Promise<string> {
    const asked = Date.now();
    let response: client.TokenEndpointResponse;
    try {
      response = await client.clientCredentialsGrant(this.config, this.scope === undefined ? {} : { scope: this.scope });
    } catch (err) {
      const error = classifyClientError(err, this.realm, 'token');
      log('policy %s: no bearer token for introspection: %s', this.realm, error.diagnostic);
      throw error.code === 'ERR_AUTHORIZATION_SERVER_UNAVAILABLE'
        ? error
        : new GatewayError('ERR_AUTHORIZATION_SERVER_UNAVAILABLE', { realm: this.realm, diagnostic: error.diagnostic, cause: err });
    }
    const life = typeof response.expires_in === 'number' && response.expires_in > 0 ? response.expires_in * 1000 : DEFAULT_LIFETIME_MS;
    this.held = {
      value: response.access_token,
      refreshAt: asked + Math.max(life - 60_000, life * 0.8),
      // A margin for the clocks and the way there: never sent in its last moments.
      usableUntil: asked + life - Math.min(5_000, life / 10),
    };
    log('policy %s: bearer token for introspection obtained (%d s)', this.realm, Math.round(life / 1000));
    return response.access_token;
  }

  /** openid-client's authentication of the introspection call with this source's token. */
  auth(): client.ClientAuth {
    return async (_as, _client, _body, headers) => {
      headers.set('authorization', `Bearer ${await this.get()}`);
    };
  }
}
