import { expect } from 'chai';
import {
  dataTypes,
  DataTypeError,
  type DataType,
  type TemporalDataType,
  type XsDateTime,
} from '../../../src/xacml/datatypes/index.js';

const XS = 'http://www.w3.org/2001/XMLSchema#';
const type = <V = unknown>(name: string): DataType<V> =>
  dataTypes.get(name.includes(':') ? name : XS + name) as DataType<V>;
const bad = (t: DataType, lexical: string): void => {
  expect(() => t.parse(lexical), lexical).to.throw(DataTypeError);
};

describe('xacml data types: lexical forms and comparisons', () => {
  it('integer: XML Schema lexical forms to bigint, arbitrary precision', () => {
    const t = type<bigint>('integer');
    expect(t.parse('+007')).to.equal(7n);
    expect(t.parse(' -0 ')).to.equal(0n);
    expect(t.parse('123456789012345678901234567890')).to.equal(123456789012345678901234567890n);
    for (const s of ['', '1.0', '1e3', '0x10', '+', '1 2', 'Infinity']) bad(t, s);
    expect(t.compare!(t.parse('10'), t.parse('9'))).to.equal(1);
    expect(t.format(t.parse('+007'))).to.equal('7');
  });

  it('double: INF, -INF, NaN, exponents; IEEE equality and order', () => {
    const t = type<number>('double');
    expect(t.parse('1E3')).to.equal(1000);
    expect(t.parse('INF')).to.equal(Infinity);
    expect(t.parse('-INF')).to.equal(-Infinity);
    expect(Number.isNaN(t.parse('NaN'))).to.equal(true);
    expect(t.parse('.5')).to.equal(0.5);
    expect(t.parse('5.')).to.equal(5);
    for (const s of ['Infinity', 'inf', 'nan', '1e', '0x1', '', '1,5']) bad(t, s);
    expect(t.equal(t.parse('NaN'), t.parse('NaN'))).to.equal(false);
    expect(t.equal(t.parse('-0'), t.parse('0'))).to.equal(true);
    expect(t.compare!(t.parse('NaN'), 1)).to.equal(undefined);
    expect(t.format(-Infinity)).to.equal('-INF');
    expect(t.format(1e21)).to.equal('1E21');
  });

  it('boolean: true/false/1/0 only', () => {
    const t = type<boolean>('boolean');
    expect([t.parse('1'), t.parse('0'), t.parse(' true '), t.parse('false')]).to.deep.equal([true, false, true, false]);
    for (const s of ['TRUE', 'yes', '', '2']) bad(t, s);
  });

  it('string keeps white space and orders by code point; anyURI collapses', () => {
    const s = type<string>('string');
    expect(s.parse('  a  ')).to.equal('  a  ');
    // U+FF21 (BMP, above the surrogates) is below U+1F600 by code point but above it in UTF-16.
    expect(s.compare!('\uFF21', '\u{1F600}')).to.equal(-1);
    expect(s.compare!('abc', 'abd')).to.equal(-1);
    expect(s.compare!('ab', 'a')).to.equal(1);
    expect(type('anyURI').parse(' http://x/ ')).to.equal('http://x/');
  });

  it('hexBinary and base64Binary compare octets, not spelling', () => {
    const h = type('hexBinary');
    expect(h.equal(h.parse('0fA1'), h.parse('0FA1'))).to.equal(true);
    bad(h, 'abc');
    bad(h, 'zz');
    const b = type('base64Binary');
    expect(b.equal(b.parse('AQID'), b.parse(' AQ ID\n'))).to.equal(true);
    expect(b.equal(b.parse('AQID'), b.parse('AQIE'))).to.equal(false);
    bad(b, 'A');
    bad(b, 'AQ=D');
  });

  it('dateTime: timezones normalized, fractional seconds of any precision, 24:00:00', () => {
    const t = type<XsDateTime>('dateTime');
    expect(t.equal(t.parse('2002-03-22T08:23:47-05:00'), t.parse('2002-03-22T13:23:47Z'))).to.equal(true);
    expect(t.compare!(t.parse('2002-03-22T08:23:47-05:00'), t.parse('2002-03-22T08:23:47-05:01'))).to.equal(-1);
    expect(t.compare!(t.parse('2002-01-01T00:00:00.1000000000001Z'), t.parse('2002-01-01T00:00:00.1Z'))).to.equal(1);
    expect(t.equal(t.parse('2002-01-01T00:00:00.50Z'), t.parse('2002-01-01T00:00:00.5Z'))).to.equal(true);
    expect(t.format(t.parse('1999-12-31T24:00:00Z'))).to.equal('2000-01-01T00:00:00Z');
    expect(t.format(t.parse('-0044-03-15T12:00:00'))).to.equal('-0044-03-15T12:00:00');
    expect(t.format(t.parse('12345-01-01T00:00:00+14:00'))).to.equal('12345-01-01T00:00:00+14:00');
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
    expect(t.parse('2000-02-29T00:00:00').day).to.equal(29);
  });

  it('date and time: order with timezones; time 24:00:00 is midnight', () => {
    const d = type<XsDateTime>('date');
    expect(d.compare!(d.parse('2002-03-22'), d.parse('2002-03-21'))).to.equal(1);
    expect(d.equal(d.parse('2002-03-22Z'), d.parse('2002-03-22+00:00'))).to.equal(true);
    // 2002-03-22 starts 5 hours later in -05:00 than in Z.
    expect(d.compare!(d.parse('2002-03-22-05:00'), d.parse('2002-03-22Z'))).to.equal(1);
    const t = type<XsDateTime>('time');
    expect(t.equal(t.parse('24:00:00'), t.parse('00:00:00'))).to.equal(true);
    expect(t.format(t.parse('24:00:00'))).to.equal('00:00:00');
    expect(t.equal(t.parse('08:23:47-05:00'), t.parse('13:23:47Z'))).to.equal(true);
    // XML Schema orders times on a reference date: 23:00-05:00 is 04:00Z the NEXT day, so it
    // is after 05:00Z (not before, as a comparison modulo 24 hours would say).
    expect(t.compare!(t.parse('23:00:00-05:00'), t.parse('05:00:00Z'))).to.equal(1);
    expect(t.compare!(t.parse('12:00:00.000001'), t.parse('12:00:00'))).to.equal(1);
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
      expect(t.equal(t.parse('2002-07-01T12:00:00'), t.parse('2002-07-01T16:00:00Z'))).to.equal(true);
      expect(t.equal(t.parse('2002-01-01T12:00:00'), t.parse('2002-01-01T17:00:00Z'))).to.equal(true);
      // Two values without timezone compare by wall clock.
      expect(t.compare!(t.parse('2002-07-01T12:00:00'), t.parse('2002-01-01T12:00:00'))).to.equal(1);
    });

    it('builds environment values from a clock reading in local time', () => {
      const instant = new Date('2024-06-01T14:30:05.250Z'); // 10:30:05.25 in New York (EDT)
      const dt = dataTypes.get(`${XS}dateTime`) as TemporalDataType<XsDateTime>;
      const d = dataTypes.get(`${XS}date`) as TemporalDataType<XsDateTime>;
      const tm = dataTypes.get(`${XS}time`) as TemporalDataType<XsDateTime>;
      expect(dt.format(dt.fromDate(instant))).to.equal('2024-06-01T10:30:05.25-04:00');
      expect(dt.equal(dt.fromDate(instant), dt.parse('2024-06-01T14:30:05.25Z'))).to.equal(true);
      expect(d.format(d.fromDate(instant))).to.equal('2024-06-01');
      expect(tm.format(tm.fromDate(instant))).to.equal('10:30:05.25');
      expect(tm.compare!(tm.fromDate(instant), tm.parse('09:00:00'))).to.equal(1);
    });
  });

  it('durations: day-time and year-month kept apart, canonical forms', () => {
    const dtd = type('http://www.w3.org/TR/2002/WD-xquery-operators-20020816#dayTimeDuration');
    expect(dtd.equal(dtd.parse('P1D'), dtd.parse('PT24H'))).to.equal(true);
    expect(dtd.equal(dtd.parse('PT90M'), dtd.parse('PT1H30M'))).to.equal(true);
    expect(dtd.equal(dtd.parse('-PT0S'), dtd.parse('PT0S'))).to.equal(true);
    expect(dtd.equal(dtd.parse('-P1D'), dtd.parse('P1D'))).to.equal(false);
    expect(dtd.format(dtd.parse('P1DT25H61M3.10S'))).to.equal('P2DT2H1M3.1S');
    for (const s of ['P', 'PT', 'P1DT', 'P1Y', 'P1M', 'PT1.S', '1D', 'P-1D']) bad(dtd, s);
    const ymd = type('yearMonthDuration'); // the XML Schema alias
    expect(ymd.equal(ymd.parse('P1Y'), ymd.parse('P12M'))).to.equal(true);
    expect(ymd.format(ymd.parse('-P14M'))).to.equal('-P1Y2M');
    for (const s of ['P', 'P1D', 'PT1M', 'P1Y1D']) bad(ymd, s);
  });

  it('rfc822Name: local part case-sensitive, domain case-insensitive', () => {
    const t = type('urn:oasis:names:tc:xacml:1.0:data-type:rfc822Name');
    expect(t.equal(t.parse('Anderson@SUN.COM'), t.parse('Anderson@sun.com'))).to.equal(true);
    expect(t.equal(t.parse('anderson@sun.com'), t.parse('Anderson@sun.com'))).to.equal(false);
    for (const s of ['nobody', '@sun.com', 'a@', 'a b@c']) bad(t, s);
  });

  it('x500Name: RFC 2253 normalization (case, spaces, escapes, OIDs, multi-valued RDNs)', () => {
    const t = type('urn:oasis:names:tc:xacml:1.0:data-type:x500Name');
    const eq = (a: string, b: string): boolean => t.equal(t.parse(a), t.parse(b));
    expect(eq('CN=John  Smith, O=Medico Corp,C=US', 'cn=john smith,o=medico corp,c=us')).to.equal(true);
    expect(eq('CN=Steve Kille+OU=Sales,O=Isode', 'ou=sales+cn=steve kille,o=isode')).to.equal(true);
    expect(eq('2.5.4.3=Bob,O=X', 'CN=Bob,O=X')).to.equal(true);
    expect(eq('CN=L. Eagle\\, Jr,O=X', 'CN="L. Eagle, Jr",O=X')).to.equal(true);
    expect(eq('CN=Caf\\C3\\A9,O=X', 'CN=Café,O=X')).to.equal(true);
    expect(eq('CN=Bob,O=X', 'CN=Bob,O=Y')).to.equal(false);
    expect(eq('CN=Bob,O=X', 'O=X,CN=Bob')).to.equal(false);
    bad(t, 'CN');
    bad(t, 'CN=a,=b');
  });

  it('ipAddress: IPv4/IPv6, optional mask and port range', () => {
    const t = type<{ version: number; ports?: { lo: number; hi: number } }>(
      'urn:oasis:names:tc:xacml:2.0:data-type:ipAddress',
    );
    expect(t.parse('10.0.0.1').version).to.equal(4);
    expect(t.parse('10.0.0.1/255.0.0.0:80-90').ports).to.deep.equal({ lo: 80, hi: 90 });
    expect(t.parse('10.0.0.1:-1024').ports).to.deep.equal({ lo: 0, hi: 1024 });
    expect(t.parse('10.0.0.1:8080-').ports).to.deep.equal({ lo: 8080, hi: 65535 });
    expect(t.parse('[::1]').version).to.equal(6);
    expect(t.equal(t.parse('[0:0:0:0:0:0:0:1]/[ffff::]:443'), t.parse('[::1]/[FFFF:0::0]:443'))).to.equal(true);
    expect(t.equal(t.parse('[::ffff:1.2.3.4]'), t.parse('[::ffff:102:304]'))).to.equal(true);
    expect(t.equal(t.parse('10.0.0.1'), t.parse('10.0.0.2'))).to.equal(false);
    for (const s of ['10.0.0', '10.0.0.256', '::1', '[::1', '[1::2::3]', '10.0.0.1:99999', '10.0.0.1:90-80', '10.0.0.1/x']) {
      bad(t, s);
    }
    expect(t.format(t.parse(' 10.0.0.1/255.0.0.0 '))).to.equal('10.0.0.1/255.0.0.0');
  });

  it('dnsName: host name, optional leading wildcard and port range', () => {
    const t = type<{ host: string; ports?: { lo: number; hi: number } }>(
      'urn:oasis:names:tc:xacml:2.0:data-type:dnsName',
    );
    expect(t.parse('*.Example.com:80').host).to.equal('*.example.com');
    expect(t.parse('example.com:1-').ports).to.deep.equal({ lo: 1, hi: 65535 });
    expect(t.equal(t.parse('WWW.example.COM'), t.parse('www.example.com'))).to.equal(true);
    for (const s of ['ex ample.com', '-bad.com', 'a.*.com', '*', 'a..b', 'x.com:abc']) bad(t, s);
  });
});
