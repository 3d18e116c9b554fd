/**
 * `ipAddress` and `dnsName` (XACML 2.0 A.2): network addresses with an optional mask and an
 * optional port range, host names with an optional leading `*` wildcard and port range.
 *
 * @module
 */
import { DataTypeError, type DataType } from './types.js';
import { DNS_NAME, IP_ADDRESS } from './uris.js';
import { collapse } from './lexical.js';

/** An inclusive port range; an open end is 0 or 65535. */
export interface PortRange {
  /** Lowest port. */
  readonly lo: number;
  /** Highest port. */
  readonly hi: number;
}

/** A parsed `ipAddress`. */
export class IpAddress {
  /** Use the data type's `parse`. */
  constructor(
    /** The lexical form as given (white space collapsed). */
    readonly text: string,
    /** 4 or 6. */
    readonly version: 4 | 6,
    /** The address octets (4 or 16). */
    readonly address: Uint8Array,
    /** The mask octets, when given. */
    readonly mask: Uint8Array | undefined,
    /** The port range, when given. */
    readonly ports: PortRange | undefined,
    /** Normalized form: equal addresses have equal keys. */
    readonly key: string,
  ) {}
}

/** A parsed `dnsName`. */
export class DnsName {
  /** Use the data type's `parse`. */
  constructor(
    /** The lexical form as given (white space collapsed). */
    readonly text: string,
    /** The host name, lower-cased (with its `*.` prefix when it has one). */
    readonly host: string,
    /** The port range, when given. */
    readonly ports: PortRange | undefined,
    /** Normalized form: equal names have equal keys. */
    readonly key: string,
  ) {}
}

function fail(type: string, lexical: string): never {
  throw new DataTypeError(`invalid ${type}: ${JSON.stringify(lexical)}`);
}

const PORT_RANGE_RE = /^(?:(\d+)|-(\d+)|(\d+)-(\d*))?$/;

/** `portrange = portnumber | "-" portnumber | portnumber "-" [portnumber]`; empty: any port. */
function parsePorts(s: string, type: string, lexical: string): PortRange {
  const m = PORT_RANGE_RE.exec(s);
  if (!m) fail(type, lexical);
  const num = (d: string | undefined, dflt: number): number => {
    if (d === undefined || d === '') return dflt;
    const v = Number(d);
    if (v > 65535) fail(type, lexical);
    return v;
  };
  let r: PortRange;
  if (m[1] !== undefined) r = { lo: num(m[1], 0), hi: num(m[1], 0) };
  else if (m[2] !== undefined) r = { lo: 0, hi: num(m[2], 65535) };
  else if (m[3] !== undefined) r = { lo: num(m[3], 0), hi: num(m[4], 65535) };
  else r = { lo: 0, hi: 65535 };
  if (r.lo > r.hi) fail(type, lexical);
  return r;
}

function parseIpv4(s: string): Uint8Array | undefined {
  const parts = s.split('.');
  if (parts.length !== 4) return undefined;
  const out = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const p = parts[i]!;
    if (!/^\d{1,3}$/.test(p)) return undefined;
    const v = Number(p);
    if (v > 255) return undefined;
    out[i] = v;
  }
  return out;
}

function parseIpv6(s: string): Uint8Array | undefined {
  let head = s;
  let tail = '';
  const dbl = s.indexOf('::');
  if (dbl >= 0) {
    if (s.indexOf('::', dbl + 1) >= 0) return undefined;
    head = s.slice(0, dbl);
    tail = s.slice(dbl + 2);
  }
  const groups = (part: string): number[] | undefined => {
    if (part === '') return [];
    const out: number[] = [];
    const items = part.split(':');
    for (let i = 0; i < items.length; i++) {
      const it = items[i]!;
      if (i === items.length - 1 && it.includes('.')) {
        const v4 = parseIpv4(it);
        if (!v4) return undefined;
        out.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
      } else {
        if (!/^[0-9A-Fa-f]{1,4}$/.test(it)) return undefined;
        out.push(parseInt(it, 16));
      }
    }
    return out;
  };
  const h = groups(head);
  const t = dbl >= 0 ? groups(tail) : [];
  if (!h || !t) return undefined;
  const fill = 8 - h.length - t.length;
  if (dbl >= 0 ? fill < 1 : fill !== 0) return undefined;
  const all = [...h, ...new Array<number>(fill).fill(0), ...t];
  const out = new Uint8Array(16);
  all.forEach((g, i) => {
    out[2 * i] = g >> 8;
    out[2 * i + 1] = g & 0xff;
  });
  return out;
}

function hex(b: Uint8Array | undefined): string {
  return b ? Buffer.from(b).toString('hex') : '';
}

function portsKey(p: PortRange | undefined): string {
  return p ? `${p.lo}-${p.hi}` : '';
}

/**
 * `ipAddress`: `address ["/" mask] [":" [portrange]]`; IPv4 in dotted form, IPv6 (address and
 * mask) in brackets as RFC 2732 says (`[::1]/[ffff::]:80-90`). Equality compares the octets,
 * mask and port range. Runtime value: {@link IpAddress}.
 */
export const ipAddressType: DataType<IpAddress> = {
  id: IP_ADDRESS,
  parse(lexical) {
    const s = collapse(lexical);
    let addr: Uint8Array | undefined;
    let mask: Uint8Array | undefined;
    let rest: string;
    let version: 4 | 6;
    if (s.startsWith('[')) {
      version = 6;
      const end = s.indexOf(']');
      if (end < 0) fail('ipAddress', lexical);
      addr = parseIpv6(s.slice(1, end));
      rest = s.slice(end + 1);
      if (rest.startsWith('/')) {
        if (rest[1] !== '[') fail('ipAddress', lexical);
        const mEnd = rest.indexOf(']');
        if (mEnd < 0) fail('ipAddress', lexical);
        mask = parseIpv6(rest.slice(2, mEnd));
        if (!mask) fail('ipAddress', lexical);
        rest = rest.slice(mEnd + 1);
      }
    } else {
      version = 4;
      const colon = s.indexOf(':');
      const hostPart = colon < 0 ? s : s.slice(0, colon);
      rest = colon < 0 ? '' : s.slice(colon);
      const slash = hostPart.indexOf('/');
      addr = parseIpv4(slash < 0 ? hostPart : hostPart.slice(0, slash));
      if (slash >= 0) {
        mask = parseIpv4(hostPart.slice(slash + 1));
        if (!mask) fail('ipAddress', lexical);
      }
    }
    if (!addr) fail('ipAddress', lexical);
    let ports: PortRange | undefined;
    if (rest !== '') {
      if (rest[0] !== ':') fail('ipAddress', lexical);
      ports = parsePorts(rest.slice(1), 'ipAddress', lexical);
    }
    return new IpAddress(s, version, addr, mask, ports, `${version}|${hex(addr)}|${hex(mask)}|${portsKey(ports)}`);
  },
  equal: (a, b) => a.key === b.key,
  format: (v) => v.text,
};

const LABEL_RE = /^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?$/;

/**
 * `dnsName`: `hostname [":" portrange]`, the host name as RFC 2396 3.2 says, optionally with a
 * `*` as its left-most label ("any subdomain of"). Equality compares the host name
 * case-insensitively and the port range. Runtime value: {@link DnsName}.
 */
export const dnsNameType: DataType<DnsName> = {
  id: DNS_NAME,
  parse(lexical) {
    const s = collapse(lexical);
    const colon = s.indexOf(':');
    const host = colon < 0 ? s : s.slice(0, colon);
    const labels = (host.endsWith('.') ? host.slice(0, -1) : host).split('.');
    labels.forEach((l, i) => {
      if (!(LABEL_RE.test(l) || (l === '*' && i === 0 && labels.length > 1))) fail('dnsName', lexical);
    });
    const ports = colon < 0 ? undefined : parsePorts(s.slice(colon + 1), 'dnsName', lexical);
    const h = host.toLowerCase();
    return new DnsName(s, h, ports, `${h}|${portsKey(ports)}`);
  },
  equal: (a, b) => a.key === b.key,
  format: (v) => v.text,
};
