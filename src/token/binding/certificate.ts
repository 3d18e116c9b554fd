/**
 * Certificate-bound access tokens (RFC 8705 section 3): a token whose `cnf` claim holds
 * `x5t#S256` (the SHA-256 thumbprint of a client certificate's DER, base64url) is accepted only
 * from a request that came with that certificate, over the gateway's own TLS listener or, behind a
 * TLS-terminating proxy, in the header the proxy sets.
 *
 * @module
 */
import { createHash, X509Certificate } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { CertificateRefusalReason, TokenBinding, TokenContext } from '../../context.js';
import { GatewayError } from '../../errors.js';
import type { TrustFunction } from '../../trust-proxy.js';

/** The `cnf` member of a certificate-bound token. */
export const CERTIFICATE_CONFIRMATION = 'x5t#S256';

/** What a token policy does with certificate-bound tokens: check them (the default), or accept them as bearer tokens. */
export type CertificateBoundTokens = 'enforce' | 'ignore';

/**
 * The client certificate of a request, as far as the gateway can tell: its thumbprint, or why it
 * cannot be used.
 */
export type ClientCertificate =
  | {
      /** SHA-256 of the certificate's DER, base64url (what `cnf.x5t#S256` holds). */
      thumbprint: string;
    }
  | {
      /** The request came with a certificate that cannot stand for the client. */
      unusable: Extract<CertificateRefusalReason, 'unverified_certificate' | 'bad_certificate_header'>;
    };

/** Finds the client certificate of a request; `undefined` when it came without one. */
export type ClientCertificateSource = (req: IncomingMessage) => ClientCertificate | undefined;

/** Largest certificate header read, in bytes: a URL-encoded PEM leaf certificate (RSA 4096 included) takes under half of it. */
export const MAX_CERTIFICATE_HEADER_BYTES = 8192;

/** A thumbprint as RFC 8705 writes it: 32 bytes, base64url without padding. */
const THUMBPRINT = /^[A-Za-z0-9_-]{43}$/;

/** The `x5t#S256` thumbprint of a certificate's DER. */
export function certificateThumbprint(der: Uint8Array): string {
  return createHash('sha256').update(der).digest('base64url');
}

/**
 * The certificate the client presented on the request's own TLS connection, when the listener
 * asked for one. A certificate that did not verify against the listener's client CA (a listener
 * with `clientAuth: 'optional'` lets such a client in) is `unverified_certificate`: never used.
 */
export const tlsClientCertificate: ClientCertificateSource = (req) => {
  const socket = req.socket as Partial<TLSSocket> | undefined;
  if (socket === undefined || typeof socket.getPeerCertificate !== 'function') return undefined;
  const certificate = socket.getPeerCertificate(false);
  const raw = (certificate as { raw?: Buffer } | null)?.raw;
  if (raw === undefined || raw.length === 0) return undefined;
  if (socket.authorized !== true) return { unusable: 'unverified_certificate' };
  return { thumbprint: certificateThumbprint(raw) };
};

/** The certificate of a header value: a URL-encoded PEM (nginx `$ssl_client_escaped_cert`), a PEM, or base64 DER. */
function certificateOfHeader(value: string): ClientCertificate {
  const bad: ClientCertificate = { unusable: 'bad_certificate_header' };
  let text = value.trim();
  if (text.includes('%')) {
    try {
      text = decodeURIComponent(text);
    } catch {
      return bad;
    }
  }
  try {
    const certificate = text.startsWith('-----BEGIN')
      ? new X509Certificate(text)
      : /^[A-Za-z0-9+/=\s]+$/.test(text)
        ? new X509Certificate(Buffer.from(text, 'base64'))
        : undefined;
    return certificate === undefined ? bad : { thumbprint: certificateThumbprint(certificate.raw) };
  } catch {
    return bad;
  }
}

/**
 * The client certificate from `header`, set by a TLS-terminating proxy, when the connection's
 * peer is one `trust` trusts (its own address, hop 0): then the header, and only it, stands for
 * the client's certificate (absent: the client sent none). From any other peer the header is
 * ignored and the request's own TLS connection counts. A header sent twice, larger than
 * {@link MAX_CERTIFICATE_HEADER_BYTES} or that does not hold a certificate is `bad_certificate_header`.
 */
export function clientCertificateSource(options: { header?: string | undefined; trust: TrustFunction }): ClientCertificateSource {
  const { trust } = options;
  if (options.header === undefined) return tlsClientCertificate;
  const name = options.header.toLowerCase();
  return (req) => {
    const peer = req.socket?.remoteAddress;
    if (peer === undefined || !trust(peer, 0)) return tlsClientCertificate(req);
    let value: string | undefined;
    const raw = req.rawHeaders;
    for (let i = 0; i < raw.length; i += 2) {
      if (raw[i]!.length !== name.length || raw[i]!.toLowerCase() !== name) continue;
      if (value !== undefined) return { unusable: 'bad_certificate_header' };
      value = raw[i + 1]!;
    }
    if (value === undefined || value.trim() === '') return undefined;
    if (Buffer.byteLength(value) > MAX_CERTIFICATE_HEADER_BYTES) return { unusable: 'bad_certificate_header' };
    return certificateOfHeader(value);
  };
}

/** The `x5t#S256` of a `cnf` claim: `undefined` when it has none, `null` when it is unusable. */
function confirmationOf(claims: Record<string, unknown> | undefined): string | null | undefined {
  const cnf = claims?.cnf;
  if (cnf === undefined || cnf === null || typeof cnf !== 'object' || !Object.hasOwn(cnf, CERTIFICATE_CONFIRMATION)) return undefined;
  const value = (cnf as Record<string, unknown>)[CERTIFICATE_CONFIRMATION];
  return typeof value === 'string' && THUMBPRINT.test(value) ? value : null;
}

/**
 * The thumbprint a token is bound to, from its introspection answer and its JWT claims: `undefined`
 * when neither binds it to a certificate, `null` when one holds an unusable value or the two differ.
 */
export function boundCertificate(token: TokenContext): string | null | undefined {
  const fromIntrospection = confirmationOf(token.introspection);
  const fromJwt = confirmationOf(token.jwt);
  if (fromIntrospection === null || fromJwt === null) return null;
  if (fromIntrospection !== undefined && fromJwt !== undefined && fromIntrospection !== fromJwt) return null;
  return fromIntrospection ?? fromJwt;
}

/** How `introspect` checks certificate-bound tokens. */
export interface CertificateBindingCheck {
  /** The token policy's `certificateBoundTokens`. */
  readonly mode: CertificateBoundTokens;
  /** Where the request's client certificate is found. */
  readonly source: ClientCertificateSource;
  /** The token policy (the realm of the refusal). */
  readonly realm: string;
  /** Counts a refusal (the metric of refusals by reason). */
  readonly refused?: ((reason: CertificateRefusalReason) => void) | undefined;
}

const REASON_TEXT: Readonly<Record<CertificateRefusalReason, string>> = {
  no_certificate: 'the request came without a client certificate',
  unverified_certificate: "the request's client certificate did not verify against the listener's client CA",
  bad_certificate_header: "the proxy's client certificate header is malformed, too large or repeated",
  mismatch: "the request's client certificate is not the one the token is bound to",
  invalid_cnf: "the token's cnf holds an unusable x5t#S256 (or two that differ)",
};

/**
 * Checks a validated token's certificate binding on this request and notes it on the token
 * (`token.binding`). Returns the 401 `ERR_TOKEN_INVALID` (`invalid_token`) to answer with when the
 * binding is not proven, `undefined` when the request may go on (an unbound token, a proven
 * binding, or a policy that ignores bindings).
 */
export function checkCertificateBinding(
  req: IncomingMessage,
  token: TokenContext,
  check: CertificateBindingCheck,
): GatewayError | undefined {
  const bound = boundCertificate(token);
  if (bound === undefined) {
    delete token.binding;
    return undefined;
  }
  if (check.mode === 'ignore') {
    token.binding = { kind: CERTIFICATE_CONFIRMATION, thumbprint: bound ?? '', result: 'ignored' };
    return undefined;
  }
  const presented = bound === null ? undefined : check.source(req);
  const thumbprint = presented !== undefined && 'thumbprint' in presented ? presented.thumbprint : undefined;
  const reason: CertificateRefusalReason | undefined =
    bound === null
      ? 'invalid_cnf'
      : presented === undefined
        ? 'no_certificate'
        : 'unusable' in presented
          ? presented.unusable
          : thumbprint === bound
            ? undefined
            : 'mismatch';
  const binding: TokenBinding = {
    kind: CERTIFICATE_CONFIRMATION,
    thumbprint: bound ?? '',
    result: reason === undefined ? 'verified' : 'refused',
  };
  if (reason !== undefined) binding.reason = reason;
  if (thumbprint !== undefined) binding.presented = thumbprint;
  token.binding = binding;
  if (reason === undefined) return undefined;
  check.refused?.(reason);
  return new GatewayError('ERR_TOKEN_INVALID', {
    realm: check.realm,
    diagnostic: `certificate-bound token (cnf x5t#S256) refused: ${REASON_TEXT[reason]}`,
  });
}
