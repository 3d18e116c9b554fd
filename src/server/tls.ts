/**
 * HTTPS for {@link serveGateway}: the certificate and key of both listeners, and the client CA the
 * APIs' listener asks clients for a certificate against (RFC 8705 certificate-bound tokens). Files
 * are read at start and again by {@link GatewayServer.reloadTls} (`serve` on SIGHUP).
 *
 * @module
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createSecureContext, type SecureContextOptions } from 'node:tls';
import { optionKeys, type OptionChecks } from '../options.js';

/** HTTPS settings of {@link serveGateway}. */
export interface ServeTlsOptions {
  /** The server certificate (chain), PEM: a file path, or the PEM text itself (a string starting with `-----BEGIN`, or a Buffer). */
  cert: string | Buffer;
  /** Its private key, PEM: a file path, or the PEM text. */
  key: string | Buffer;
  /**
   * CA certificates (PEM: a file path or the text) the APIs' listener asks clients for a
   * certificate against: the client certificate of certificate-bound tokens. Default: none (no
   * client certificate is asked for). The admin listener never asks for one.
   */
  clientCa?: string | Buffer;
  /**
   * `optional` (the default): a client without a certificate, or whose certificate does not
   * verify, is served (its certificate-bound tokens are refused); `required`: the TLS handshake
   * fails without a verified certificate (needs `clientCa`).
   */
  clientAuth?: 'optional' | 'required';
}

/** What a listener's secure context is made of, read. */
export interface TlsMaterial {
  /** Both listeners' certificate and key. */
  readonly identity: { readonly cert: Buffer; readonly key: Buffer };
  /** The client CA, when clients are asked for a certificate. */
  readonly clientCa: Buffer | undefined;
}

/** The checked options: where each part comes from. */
export interface TlsSettings {
  readonly cert: string | Buffer;
  readonly key: string | Buffer;
  readonly clientCa: string | Buffer | undefined;
  readonly clientAuth: 'optional' | 'required';
}

const TLS_KEYS = optionKeys<ServeTlsOptions>({ cert: true, key: true, clientCa: true, clientAuth: true });

function source(check: OptionChecks, value: unknown, path: string): string | Buffer {
  if (Buffer.isBuffer(value)) return value;
  return check.string(value, path, undefined, undefined, 'a PEM file path or PEM text');
}

/** `tls`, checked (nothing read yet); `undefined` without it. */
export function tlsSettings(check: OptionChecks, given: ServeTlsOptions | undefined): TlsSettings | undefined {
  if (given === undefined) return undefined;
  check.object(given, 'tls');
  check.known(given, 'tls', TLS_KEYS);
  const clientAuth = given.clientAuth ?? 'optional';
  if (clientAuth !== 'optional' && clientAuth !== 'required') check.fail('tls.clientAuth', 'must be optional or required');
  if (clientAuth === 'required' && given.clientCa === undefined) check.fail('tls.clientAuth', 'required needs tls.clientCa');
  return {
    cert: source(check, given.cert, 'tls.cert'),
    key: source(check, given.key, 'tls.key'),
    clientCa: given.clientCa === undefined ? undefined : source(check, given.clientCa, 'tls.clientCa'),
    clientAuth,
  };
}

/** A TLS file that cannot be read or used. */
export class TlsMaterialError extends Error {
  override readonly name = 'TlsMaterialError';
}

async function pem(value: string | Buffer, path: string): Promise<Buffer> {
  if (Buffer.isBuffer(value)) return value;
  if (value.startsWith('-----BEGIN')) return Buffer.from(value);
  try {
    return await readFile(value);
  } catch (err) {
    throw new TlsMaterialError(`serveGateway: ${path}: cannot read ${value} (${(err as { code?: string }).code ?? String(err)})`, {
      cause: err,
    });
  }
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/** Where a part comes from, for a message: its file, or PEM text given as such. */
function origin(value: string | Buffer): string {
  return typeof value === 'string' && !value.startsWith('-----BEGIN') ? value : 'the PEM text given';
}

/**
 * Checks that `text` holds PEM certificates, one at least, each of which can be read. OpenSSL
 * takes a client CA file with none (empty, or garbage) as a list of no CA at all: every client
 * certificate would then be refused.
 */
function checkCertificates(text: Buffer, value: string | Buffer, path: string): void {
  const blocks = text.toString('latin1').match(PEM_CERTIFICATE);
  if (blocks === null) throw new TlsMaterialError(`serveGateway: ${path}: ${origin(value)} holds no PEM certificate`);
  for (const block of blocks) {
    try {
      new X509Certificate(block);
    } catch (err) {
      throw new TlsMaterialError(
        `serveGateway: ${path}: ${origin(value)} holds a certificate that cannot be read (${(err as Error).message})`,
        {
          cause: err,
        },
      );
    }
  }
}

/** Checks that `text` is a private key that can be read (the message never holds the key). */
function checkKey(text: Buffer, value: string | Buffer): void {
  try {
    createPrivateKey(text);
  } catch (err) {
    throw new TlsMaterialError(
      `serveGateway: tls.key: ${origin(value)} holds no private key that can be read (${(err as Error).message})`,
      {
        cause: err,
      },
    );
  }
}

/**
 * Reads the certificate, key and client CA, and checks each (certificates that can be read, one at
 * least in each file; a key that can be read) and that they make a secure context (the key
 * matches the certificate). The same checks at start and at every reload: a file that cannot be
 * used is refused, never put in force.
 */
export async function readTls(settings: TlsSettings): Promise<TlsMaterial> {
  const [cert, key, clientCa] = await Promise.all([
    pem(settings.cert, 'tls.cert'),
    pem(settings.key, 'tls.key'),
    settings.clientCa === undefined ? undefined : pem(settings.clientCa, 'tls.clientCa'),
  ]);
  checkCertificates(cert, settings.cert, 'tls.cert');
  checkKey(key, settings.key);
  if (clientCa !== undefined) checkCertificates(clientCa, settings.clientCa!, 'tls.clientCa');
  try {
    createSecureContext({ cert, key, ...(clientCa === undefined ? {} : { ca: clientCa }) });
  } catch (err) {
    // OpenSSL's reason (a key that does not match, a file that holds no PEM), never the key itself.
    throw new TlsMaterialError(`serveGateway: tls: the certificate, key or client CA cannot be used (${(err as Error).message})`, {
      cause: err,
    });
  }
  return { identity: { cert, key }, clientCa };
}

/** The secure context options of the APIs' listener (`api`) or the admin listener's. */
export function contextOptions(material: TlsMaterial, api: boolean): SecureContextOptions {
  const { cert, key } = material.identity;
  return api && material.clientCa !== undefined ? { cert, key, ca: material.clientCa } : { cert, key };
}
