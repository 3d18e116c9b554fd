/**
 * Which peers may speak for the client: Express's `trust proxy` setting, compiled once.
 *
 * @module
 */
import type { IncomingMessage } from 'node:http';
import proxyAddr from 'proxy-addr';
import type { OptionChecks } from './options.js';

/**
 * Who is trusted to send `X-Forwarded-For`, `-Host`, `-Proto` and `Forwarded`, with the values and
 * meaning of Express's `trust proxy` setting: `false` (no one, the default), `true` (everyone), a
 * hop count, addresses and subnets (`'loopback'`, `'10.0.0.0/8'`, a comma-separated list or an
 * array), or a function `(address, hop) => boolean`.
 */
export type TrustProxy = boolean | number | string | readonly string[] | ((address: string, hop: number) => boolean);

/** A compiled {@link TrustProxy}: whether the peer at `hop` (0 = the socket's) is trusted. */
export type TrustFunction = (address: string, hop: number) => boolean;

const NOBODY: TrustFunction = () => false;

/** Compiles a {@link TrustProxy} setting, throwing the factory's `InvalidOptionError` for `path` when it is invalid. */
export function compileTrust(value: TrustProxy | undefined, check: OptionChecks, path: string): TrustFunction {
  if (value === undefined || value === false) return NOBODY;
  if (value === true) return () => true;
  if (typeof value === 'function') return value;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value) || value < 0) check.fail(path, 'must be a hop count (a whole number >= 0)');
    return (_address, hop) => hop < value;
  }
  const list = typeof value === 'string' ? value.split(',').map((v) => v.trim()) : value;
  if (!Array.isArray(list) || list.some((v) => typeof v !== 'string' || v === '')) {
    check.fail(path, 'must be a boolean, a hop count, addresses/subnets or a function');
  }
  try {
    return proxyAddr.compile([...list]);
  } catch (err) {
    check.fail(path, `has an invalid address: ${(err as Error).message}`);
  }
}

/**
 * The client's address as far as `trust` lets the gateway believe `X-Forwarded-For`: the socket's
 * peer unless it is a trusted proxy, then the nearest untrusted address it forwarded (Express's
 * `req.ip`).
 */
export function clientAddressOf(trust: TrustFunction): (req: IncomingMessage) => string | undefined {
  return (req) => {
    // Without X-Forwarded-For there is nothing to walk (and no proxy-addr work per request).
    if (req.headers['x-forwarded-for'] === undefined) return req.socket.remoteAddress;
    return req.socket.remoteAddress === undefined ? undefined : proxyAddr(req, trust);
  };
}
