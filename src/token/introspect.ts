/**
 * `introspect`: validates the request's token with a token policy and puts the result on
 * `req.gateway.token`.
 *
 * @module
 */
import type { IncomingMessage } from 'node:http';
import { addDiagnostic, gatewayContext, type TokenContext } from '../context.js';
import { GatewayError } from '../errors.js';
import { logger } from '../log.js';
import { optionChecks, optionKeys } from '../options.js';
import { extractOptions, findToken, type ExtractOptions, type RequireTokenOptions } from './extract.js';
import type { TokenMiddleware } from './middleware.js';
import { TokenPolicy, type TokenValidation } from './policy.js';
import { noteValidatingPolicy } from './validated-by.js';
import {
  checkCertificateBinding,
  tlsClientCertificate,
  type CertificateBindingCheck,
  type ClientCertificateSource,
} from './binding/certificate.js';

const log = logger('token');

/** Options of {@link introspect}. */
export interface IntrospectOptions {
  /** The token policy that validates the token. */
  policy: TokenPolicy;
  /**
   * How to find the token when `requireToken` did not run before (so that `introspect` works
   * alone): the same options as `requireToken`, without `policy`. Default: every RFC 6750 method.
   */
  extraction?: Omit<RequireTokenOptions, 'policy'>;
  /**
   * The client's address, for the policy's throttle of invalid tokens (`invalidTokenThrottle`).
   * Default: the connection's peer (`req.socket.remoteAddress`). Behind a reverse proxy every
   * caller has the proxy's address: give the caller's here (for example Express's `req.ip` with
   * `trust proxy` set), or switch the throttle off.
   */
  clientAddress?: (req: IncomingMessage) => string | undefined;
  /**
   * Where the request's client certificate is found, for certificate-bound tokens (the policy's
   * `certificateBoundTokens`). Default: the certificate the client presented on the request's
   * own TLS connection, when it verified against the listener's client CA. Behind a
   * TLS-terminating proxy, `createGateway` reads it from its `clientCertificateHeader`.
   */
  clientCertificate?: ClientCertificateSource;
}

const socketAddress = (req: IncomingMessage): string | undefined => req.socket?.remoteAddress;

const INTROSPECT_KEYS = optionKeys<IntrospectOptions>({
  policy: true,
  extraction: true,
  clientAddress: true,
  clientCertificate: true,
});
const EXTRACTION_KEYS = optionKeys<NonNullable<IntrospectOptions['extraction']>>({
  methods: true,
  maxBodySize: true,
  maxBodyFields: true,
  maxTokenLength: true,
  bodyTimeoutMs: true,
  maxBodyReadsPerAddress: true,
  clientAddress: true,
});

/**
 * Validates the request's bearer token with `options.policy` (introspection, JWT validation and/or
 * UserInfo, as the policy is switched) and stores the normalized information and raw claims on
 * `req.gateway.token` (`info`, `introspection`, `jwt`, `userInfo`, `processTimeMs`). When no token
 * was found yet it extracts it first, as `requireToken` does.
 *
 * Errors (through `next(err)`): 401 `ERR_TOKEN_INVALID` / `ERR_TOKEN_EXPIRED` (`protocol:GATEWAY-1367`; also a
 * certificate-bound token, RFC 8705, without its client certificate: see the policy's `certificateBoundTokens`),
 * 429 `ERR_TOKEN_THROTTLED` (`protocol:GATEWAY-1370`, an address that sent too many invalid tokens,
 * see the policy's `invalidTokenThrottle`), 503 `ERR_AUTHORIZATION_SERVER_UNAVAILABLE`
 * (`protocol:GATEWAY-1369`, cause in diagnostics), plus the 400s of `requireToken`. No error lets
 * the request through. A stale result served under the policy's `staleIfErrorSeconds` adds a
 * `warn` diagnostic that says so.
 *
 * @example
 * ```ts
 * import express from 'express';
 * import { createTokenPolicy, introspect, problemJsonErrorHandler, requireToken } from 'express-access-gateway';
 *
 * const policy = createTokenPolicy({ name: 'my-idp', issuer: 'http://127.0.0.1:9000', clientId: 'gateway', clientSecret: 'gateway-secret' });
 * const app = express();
 * app.get('/pets', requireToken({ policy }), introspect({ policy }), (req, res) => {
 *   res.json(req.gateway?.token?.info);
 * });
 * app.use(problemJsonErrorHandler());
 * ```
 */
export function introspect(options: IntrospectOptions): TokenMiddleware {
  const check = optionChecks('introspect');
  check.object(options, '');
  check.known(options, '', INTROSPECT_KEYS);
  check.known(options.extraction, 'extraction', EXTRACTION_KEYS);
  if (!(options.policy instanceof TokenPolicy)) check.fail('policy', 'must be a TokenPolicy (see createTokenPolicy)');
  const { policy } = options;
  const extraction = check.object<NonNullable<IntrospectOptions['extraction']>>(options.extraction, 'extraction', {});
  const extract: ExtractOptions = extractOptions(
    check,
    // The client's address of the throttle counts form bodies too, unless the extraction names its own.
    extraction.clientAddress === undefined && typeof options.clientAddress === 'function'
      ? { ...extraction, clientAddress: options.clientAddress }
      : extraction,
    policy.name,
    'extraction.',
    policy.dpop !== 'off',
    policy,
  );
  const clientAddress =
    check.optionalFunction<(req: IncomingMessage) => string | undefined>(options.clientAddress, 'clientAddress') ?? socketAddress;
  const binding: CertificateBindingCheck = {
    mode: policy.certificateBoundTokens,
    source: check.optionalFunction<ClientCertificateSource>(options.clientCertificate, 'clientCertificate') ?? tlsClientCertificate,
    realm: policy.name,
    refused: (reason) => policy.bindingRefused('x5t#S256', reason),
  };
  const validMessage = `token validated by policy ${policy.name}`;
  const cachedMessage = `${validMessage} (cached)`;

  /**
   * Puts a successful validation on the request's token context, with its diagnostic; returns the
   * error to answer with when the token's sender constraint is not met on this request.
   */
  function accept(req: IncomingMessage, token: TokenContext, validation: TokenValidation, started: number): GatewayError | undefined {
    token.policy = policy.name;
    noteValidatingPolicy(token, policy);
    token.info = validation.info;
    if (validation.introspection !== undefined) token.introspection = validation.introspection;
    if (validation.jwt !== undefined) token.jwt = validation.jwt;
    if (validation.userInfo !== undefined) token.userInfo = validation.userInfo;
    token.processTimeMs = Math.round((performance.now() - started) * 1000) / 1000;
    if (validation.stale !== undefined) {
      const age = Math.round((Date.now() - validation.stale.checkedAt) / 1000);
      addDiagnostic(
        req,
        'warn',
        'TOKEN_VALID',
        `${validMessage} (stale: last checked ${age} s ago; the authorization server could not be used: ${validation.stale.cause})`,
      );
    } else {
      addDiagnostic(req, 'info', 'TOKEN_VALID', validation.cached ? cachedMessage : validMessage);
    }
    // Checked first: on every request, even the arguments of a disabled log cost.
    if (log.enabled)
      log(
        '%s token valid (policy %s%s)',
        req.gateway?.transactionId,
        policy.name,
        validation.cached ? ', cached' : validation.stale ? ', stale' : '',
      );
    return checkCertificateBinding(req, token, binding);
  }

  /** The error to answer with when validation failed: a GatewayError as is, anything else a 503 that leaks nothing. */
  function failure(req: IncomingMessage, token: TokenContext, err: unknown, started: number): GatewayError {
    token.processTimeMs = Math.round((performance.now() - started) * 1000) / 1000;
    if (err instanceof GatewayError) {
      log('%s %s: %s', req.gateway?.transactionId, err.code, err.diagnostic ?? '');
      return err;
    }
    // Fail closed on anything unforeseen, without leaking it.
    return new GatewayError('ERR_AUTHORIZATION_SERVER_UNAVAILABLE', {
      realm: policy.name,
      diagnostic: `unexpected failure while validating the token (${err instanceof Error ? err.name : typeof err})`,
      cause: err,
    });
  }

  /** The error passed on: with the policy's DPoP challenge when it has DPoP on. */
  const refuse = (req: IncomingMessage, next: (err?: unknown) => void) => (err: unknown) => next(policy.withChallenge(req, err));

  return function introspectMiddleware(req, _res, next) {
    const found = gatewayContext(req).token;
    if (found !== undefined) {
      // A cached result is answered synchronously: no promise, no extra turn of the event loop.
      const started = performance.now();
      let validation: TokenValidation | undefined;
      try {
        validation = policy.validateFromCache(found.raw);
      } catch (err) {
        refuse(req, next)(failure(req, found, err, started));
        return;
      }
      if (validation !== undefined) {
        const refused = accept(req, found, validation, started);
        if (refused !== undefined) {
          refuse(req, next)(refused);
          return;
        }
        // How the token is bound to a key, checked against the request: nothing left to do for most tokens.
        let binding: Promise<void> | undefined;
        try {
          binding = policy.checkBinding(req, found, validation);
        } catch (err) {
          refuse(req, next)(failure(req, found, err, started));
          return;
        }
        if (binding === undefined) next();
        else binding.then(() => next(), refuse(req, next));
        return;
      }
    }
    run().then(() => next(), refuse(req, next));

    async function run(): Promise<void> {
      const context = gatewayContext(req);
      if (context.token === undefined) await findToken(req, extract);
      const token = context.token;
      if (token === undefined) throw new GatewayError('ERR_TOKEN_MISSING', { realm: policy.name });
      const started = performance.now();
      let validation: TokenValidation;
      try {
        validation = await policy.validate(token.raw, { clientAddress: clientAddress(req) });
      } catch (err) {
        throw failure(req, token, err, started);
      }
      const refused = accept(req, token, validation, started);
      if (refused !== undefined) throw refused;
      let binding: Promise<void> | undefined;
      try {
        binding = policy.checkBinding(req, token, validation);
      } catch (err) {
        throw failure(req, token, err, started);
      }
      if (binding !== undefined) await binding;
    }
  };
}
