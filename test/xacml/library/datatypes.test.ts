import assert from 'node:assert/strict';
import { dataTypes, DataTypeError, type DataType, type TemporalDataType, type XsDateTime } from '../../../src/xacml/datatypes/index.js';

const XS = 'http://www.w3.org/2001/XMLSchema#';
const type = <V = unknown>(name: string): DataType<V> => dataTypes.get(name.includes(':') ? name : XS + name) as DataType<V>;
const bad = (t: DataType, lexical: string): void => {
  assert.throws(() => t.parse(lexical), DataTypeError, lexical);
};

describe('xacml data types: lexical forms and comparisons', () => {
  it('integer: XML Schema lexical forms to bigint, arbitrary precision', () => {
    const t = type<bigint>('integer');
    assert.equal(t.parse('+007'), 7n);
    assert.equal(t.parse(' -0 '), 0n);
    assert.equal(t.parse('123456789012345678901234567890'), 123456789012345678901234567890n);
    for (const s of ['', '1.0', '1e3', '0x10', '+', '1 2', 'Infinity']) bad(t, s);
    assert.equal(t.compare!(t.parse('10'), t.parse('9')), 1);
    assert.equal(t.format(t.parse('+007')), '7');
  });

  it('double: INF, -INF, NaN, exponents; IEEE equality and order', () => {
    const t = type<number>('double');
    assert.equal(t.parse('1E3'), 1000);
    assert.equal(t.parse('INF'), Infinity);
    assert.equal(t.parse('-INF'), -Infinity);
    assert.equal(Number.isNaN(t.parse('NaN')), true);
    assert.equal(t.parse('.5'), 0.5);
    assert.equal(t.parse('5.'), 5);
    for (const s of ['Infinity', 'inf', 'nan', '1e', '0x1', '', '1,5']) bad(t, s);
    assert.equal(t.equal(t.parse('NaN'), t.parse('NaN')), false);
    assert.equal(t.equal(t.parse('-0'), t.parse('0')), true);
    assert.equal(t.compare!(t.parse('NaN'), 1), undefined);
    assert.equal(t.format(-Infinity), '-INF');
    assert.equal(t.format(1e21), '1E21');
  });

  it('boolean: true/false/1/0 only', () => {
    const t = type<boolean>('boolean');
    assert.deepEqual([t.parse('1'), t.parse('0'), t.parse(' true '), t.parse('false')], [true, false, true, false]);
    for (const s of ['TRUE', 'yes', '', '2']) bad(t, s);
  });

  it('string keeps white space and orders by code point; anyURI collapses', () => {
    const s = type<string>('string');
    assert.equal(s.parse('  a  '), '  a  ');
    // U+FF21 (BMP, above the surrogates) is below U+1F600 by code point but above it in UTF-16.
    assert.equal(s.compare!('\uFF21', '\u{1F600}'), -1);
    assert.equal(s.compare!('abc', 'abd'), -1);
    assert.equal(s.compare!('ab', 'a'), 1);
    assert.equal(type('anyURI').parse(' http://x/ '), 'http://x/');
  });

  it('hexBinary and base64Binary compare octets, not spelling', () => {
    const h = type('hexBinary');
    assert.equal(h.equal(h.parse('0fA1'), h.parse('0FA1')), true);
    bad(h, 'abc');
    bad(h, 'zz');
    const b = type('base64Binary');
    assert.equal(b.equal(b.parse('AQID'), b.parse(' AQ ID\n')), true);
    assert.equal(b.equal(b.parse('AQID'), b.parse('AQIE')), false);
    bad(b, 'A');
    bad(b, 'AQ=D');
  });

  it('dateTime: timezones normalized, fractional seconds of any precision, 24:00:00', () => {
    const t = type<XsDateTime>('dateTime');
    assert.equal(t.equal(t.parse('2002-03-22T08:23:47-05:00'), t.parse('2002-03-22T13:23:47Z')), true);
    assert.equal(t.compare!(t.parse('2002-03-22T08:23:47-05:00'), t.parse('2002-03-22T08:23:47-05:01')), -1);
    assert.equal(t.compare!(t.parse('2002-01-01T00:00:00.1000000000001Z'), t.parse('2002-01-01T00:00:00.1Z')), 1);
    assert.equal(t.equal(t.parse('2002-01-01T00:00:00.50Z'), t.parse('2002-01-01T00:00:00.5Z')), true);
    assert.equal(t.format(t.parse('1999-12-31T24:00:00Z')), '2000-01-01T00:00:00Z');
    assert.equal(t.format(t.parse('-0044-03-15T12:00:00')), '-0044-03-15T12:00:00');
    assert.equal(t.format(t.parse('12345-01-01T00:00:00+14:00')), '12345-01-01T00:00:00+14:00');
    for (const s of [
      '2002-02-29T00:00:00', // not a leap year
      '2002-13-01T00:00:00',
      '2002-01-01T24:00:01',
      '2002-01-01T23:60:00',
      '2002-01-01T00:00:00+14:01',
      '2002-01-01T00:00:00+15:00',
      '0000-01-01T00:00:00',
      '02002-01-01T00:00:00',
      '2002-01-01',
      '2002-1-01T00:00:00',
    ]) {
      bad(t, s);
    }
    assert.equal(t.parse('2000-02-29T00:00:00').day, 29);
  });

  it('date and time: order with timezones; time 24:00:00 is midnight', () => {
    const d = type<XsDateTime>('date');
    assert.equal(d.compare!(d.parse('2002-03-22'), d.parse('2002-03-21')), 1);
    assert.equal(d.equal(d.parse('2002-03-22Z'), d.parse('2002-03-22+00:00')), true);
    // 2002-03-22 starts 5 hours later in -05:00 than in Z.
    assert.equal(d.compare!(d.parse('2002-03-22-05:00'), d.parse('2002-03-22Z')), 1);
    const t = type<XsDateTime>('time');
    assert.equal(t.equal(t.parse('24:00:00'), t.parse('00:00:00')), true);
    assert.equal(t.format(t.parse('24:00:00')), '00:00:00');
    assert.equal(t.equal(t.parse('08:23:47-05:00'), t.parse('13:23:47Z')), true);
    // XML Schema orders times on a reference date: 23:00-05:00 is 04:00Z the NEXT day, so it
    // is after 05:00Z (not before, as a comparison modulo 24 hours would say).
    assert.equal(t.compare!(t.parse('23:00:00-05:00'), t.parse('05:00:00Z')), 1);
    assert.equal(t.compare!(t.parse('12:00:00.000001'), t.parse('12:00:00')), 1);
    bad(t, '25:00:00');
    bad(t, '12:00');
  });

  describe('implicit timezone: the local timezone of the process', () => {
    let saved: string | undefined;
    before(() => {
      saved = process.env.TZ;
      process.env.TZ = 'America/New_York';
    });
    after(() => {
      if (saved === undefined) delete process.env.TZ;
      else process.env.TZ = saved;
    });

    it('gives a dateTime without timezone the local offset of its own date (DST aware)', () => {
      const t = type<XsDateTime>('dateTime');
      assert.equal(t.equal(t.parse('2002-07-01T12:00:00'), t.parse('2002-07-01T16:00:00Z')), true);
      assert.equal(t.equal(t.parse('2002-01-01T12:00:00'), t.parse('2002-01-01T17:00:00Z')), true);
      // Two values without timezone compare by wall clock.
      assert.equal(t.compare!(t.parse('2002-07-01T12:00:00'), t.parse('2002-01-01T12:00:00')), 1);
    });

    it('builds environment values from a clock reading in local time', () => {
      const instant = new Date('2024-06-01T14:30:05.250Z'); // 10:30:05.25 in New York (EDT)
      const dt = dataTypes.get(`${XS}dateTime`) as TemporalDataType<XsDateTime>;
      const d = dataTypes.get(`${XS}date`) as TemporalDataType<XsDateTime>;
      const tm = dataTypes.get(`${XS}time`) as TemporalDataType<XsDateTime>;
      assert.equal(dt.format(dt.fromDate(instant)), '2024-06-01T10:30:05.25-04:00');
      assert.equal(dt.equal(dt.fromDate(instant), dt.parse('2024-06-01T14:30:05.25Z')), true);
      assert.equal(d.format(d.fromDate(instant)), '2024-06-01');
      assert.equal(tm.format(tm.fromDate(instant)), '10:30:05.25');
      assert.equal(tm.compare!(tm.fromDate(instant), tm.parse('09:00:00')), 1);
    });
  });

  it('durations: day-time and year-month kept apart, canonical forms', () => {
    const dtd = type('http://www.w3.org/TR/2002/WD-xquery-operators-20020816#dayTimeDuration');
    assert.equal(dtd.equal(dtd.parse('P1D'), dtd.parse('PT24H')), true);
    assert.equal(dtd.equal(dtd.parse('PT90M'), dtd.parse('PT1H30M')), true);
    assert.equal(dtd.equal(dtd.parse('-PT0S'), dtd.parse('PT0S')), true);
    assert.equal(dtd.equal(dtd.parse('-P1D'), dtd.parse('P1D')), false);
    assert.equal(dtd.format(dtd.parse('P1DT25H61M3.10S')), 'P2DT2H1M3.1S');
    for (const s of ['P', 'PT', 'P1DT', 'P1Y', 'P1M', 'PT1.S', '1D', 'P-1D']) bad(dtd, s);
    const ymd = type('yearMonthDuration'); // the XML Schema alias
    assert.equal(ymd.equal(ymd.parse('P1Y'), ymd.parse('P12M')), true);
    assert.equal(ymd.format(ymd.parse('-P14M')), '-P1Y2M');
    for (const s of ['P', 'P1D', 'PT1M', 'P1Y1D']) bad(ymd, s);
  });

  it('rfc822Name: local part case-sensitive, domain case-insensitive', () => {
    const t = type('urn:oasis:names:tc:xacml:1.0:data-type:rfc822Name');
    assert.equal(t.equal(t.parse('Anderson@SUN.COM'), t.parse('Anderson@sun.com')), true);
    assert.equal(t.equal(t.parse('anderson@sun.com'), t.parse('Anderson@sun.com')), false);
    for (const s of ['nobody', '@sun.com', 'a@', 'a b@c']) bad(t, s);
  });

  it('x500Name: RFC 2253 normalization (case, spaces, escapes, OIDs, multi-valued RDNs)', () => {
    const t = type('urn:oasis:names:tc:xacml:1.0:data-type:x500Name');
    const eq = (a: string, b: string): boolean => t.equal(t.parse(a), t.parse(b));
    assert.equal(eq('CN=John  Smith, O=Medico Corp,C=US', 'cn=john smith,o=medico corp,c=us'), true);
    assert.equal(eq('CN=Steve Kille+OU=Sales,O=Isode', 'ou=sales+cn=steve kille,o=isode'), true);
    assert.equal(eq('2.5.4.3=Bob,O=X', 'CN=Bob,O=X'), true);
    assert.equal(eq('CN=L. Eagle\\, Jr,O=X', 'CN="L. Eagle, Jr",O=X'), true);
    assert.equal(eq('CN=Caf\\C3\\A9,O=X', 'CN=Café,O=X'), true);
    assert.equal(eq('CN=Bob,O=X', 'CN=Bob,O=Y'), false);
    assert.equal(eq('CN=Bob,O=X', 'O=X,CN=Bob'), false);
    bad(t, 'CN');
    bad(t, 'CN=a,=b');
  });

  it('ipAddress: IPv4/IPv6, optional mask and port range', () => {
    const t = type<{ version: number; ports?: { lo: number; hi: number } }>('urn:oasis:names:tc:xacml:2.0:data-type:ipAddress');
    assert.equal(t.parse('10.0.0.1').version, 4);
    assert.deepEqual(t.parse('10.0.0.1/255.0.0.0:80-90').ports, { lo: 80, hi: 90 });
    assert.deepEqual(t.parse('10.0.0.1:-1024').ports, { lo: 0, hi: 1024 });
    assert.deepEqual(t.parse('10.0.0.1:8080-').ports, { lo: 8080, hi: 65535 });
    assert.equal(t.parse('[::1]').version, 6);
    assert.equal(t.equal(t.parse('[0:0:0:0:0:0:0:1]/[ffff::]:443'), t.parse('[::1]/[FFFF:0::0]:443')), true);
    assert.equal(t.equal(t.parse('[::ffff:1.2.3.4]'), t.parse('[::ffff:102:304]')), true);
    assert.equal(t.equal(t.parse('10.0.0.1'), t.parse('10.0.0.2')), false);
    for (const s of ['10.0.0', '10.0.0.256', '::1', '[::1', '[1::2::3]', '10.0.0.1:99999', '10.0.0.1:90-80', '10.0.0.1/x']) {
      bad(t, s);
    }
    assert.equal(t.format(t.parse(' 10.0.0.1/255.0.0.0 ')), '10.0.0.1/255.0.0.0');
  });

  it('dnsName: host name, optional leading wildcard and port range', () => {
    const t = type<{ host: string; ports?: { lo: number; hi: number } }>('urn:oasis:names:tc:xacml:2.0:data-type:dnsName');
    assert.equal(t.parse('*.Example.com:80').host, '*.example.com');
    assert.deepEqual(t.parse('example.com:1-').ports, { lo: 1, hi: 65535 });
    assert.equal(t.equal(t.parse('WWW.example.COM'), t.parse('www.example.com')), true);
    for (const s of ['ex ample.com', '-bad.com', 'a.*.com', '*', 'a..b', 'x.com:abc']) bad(t, s);
  });
});
