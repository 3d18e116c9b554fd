import { expect } from 'chai';
import { dataTypes } from '../../../src/xacml/datatypes/index.js';
import { functions, XacmlProcessingError, type FunctionSpec } from '../../../src/xacml/functions/index.js';

const XS = 'http://www.w3.org/2001/XMLSchema#';
const DTD = 'http://www.w3.org/TR/2002/WD-xquery-operators-20020816#dayTimeDuration';
const YMD = 'http://www.w3.org/TR/2002/WD-xquery-operators-20020816#yearMonthDuration';
const RFC822 = 'urn:oasis:names:tc:xacml:1.0:data-type:rfc822Name';
const X500 = 'urn:oasis:names:tc:xacml:1.0:data-type:x500Name';
const IP = 'urn:oasis:names:tc:xacml:2.0:data-type:ipAddress';
const DNS = 'urn:oasis:names:tc:xacml:2.0:data-type:dnsName';

function fn(name: string): FunctionSpec {
  const f =
    functions.get(`urn:oasis:names:tc:xacml:1.0:function:${name}`) ??
    functions.get(`urn:oasis:names:tc:xacml:2.0:function:${name}`);
  if (!f) throw new Error(`no function ${name}`);
  return f;
}
const v = (type: string, lexical: string): unknown => dataTypes.get(type.includes(':') ? type : XS + type)!.parse(lexical);
const fmt = (type: string, value: unknown): string => dataTypes.get(type.includes(':') ? type : XS + type)!.format(value);
const call = (name: string, ...args: unknown[]): unknown => fn(name).impl(args);

describe('xacml functions', () => {
  it('are registered in the namespace where XACML 2.0 defines them', () => {
    expect(functions.has('urn:oasis:names:tc:xacml:1.0:function:string-equal')).to.equal(true);
    expect(functions.has('urn:oasis:names:tc:xacml:2.0:function:string-equal')).to.equal(false);
    expect(functions.has('urn:oasis:names:tc:xacml:2.0:function:time-in-range')).to.equal(true);
    expect(functions.has('urn:oasis:names:tc:xacml:2.0:function:string-concatenate')).to.equal(true);
    expect(functions.has('urn:oasis:names:tc:xacml:1.0:function:string-regexp-match')).to.equal(true);
    expect(functions.has('urn:oasis:names:tc:xacml:2.0:function:anyURI-regexp-match')).to.equal(true);
    expect(functions.has('urn:oasis:names:tc:xacml:2.0:function:ipAddress-bag')).to.equal(true);
    for (const evaluatorOwned of ['and', 'or', 'n-of', 'not', 'any-of', 'map', 'xpath-node-count']) {
      expect(functions.has(`urn:oasis:names:tc:xacml:1.0:function:${evaluatorOwned}`)).to.equal(false);
    }
  });

  it('equality of every type uses the type equality, not JavaScript identity', () => {
    expect(call('integer-equal', 7n, v('integer', '+007'))).to.equal(true);
    expect(call('double-equal', NaN, NaN)).to.equal(false);
    expect(call('dateTime-equal', v('dateTime', '2002-03-22T08:23:47-05:00'), v('dateTime', '2002-03-22T13:23:47Z'))).to.equal(true);
    expect(call('dayTimeDuration-equal', v(DTD, 'P1D'), v(DTD, 'PT24H'))).to.equal(true);
    expect(call('yearMonthDuration-equal', v(YMD, 'P1Y'), v(YMD, 'P13M'))).to.equal(false);
    expect(call('rfc822Name-equal', v(RFC822, 'a@X.org'), v(RFC822, 'a@x.ORG'))).to.equal(true);
    expect(call('x500Name-equal', v(X500, 'cn=A, o=B'), v(X500, 'CN=a,O=b'))).to.equal(true);
    expect(call('hexBinary-equal', v('hexBinary', 'ab'), v('hexBinary', 'AB'))).to.equal(true);
    expect(call('string-equal', 'a', 'A')).to.equal(false);
    expect(fn('boolean-equal').params).to.deep.equal([
      { dataType: `${XS}boolean`, bag: false },
      { dataType: `${XS}boolean`, bag: false },
    ]);
  });

  it('integer and double arithmetic; division by zero is a processing error', () => {
    expect(call('integer-add', 1n, 2n, 3n)).to.equal(6n);
    expect(fn('integer-add').minArgs).to.equal(2);
    expect(fn('integer-add').variadic).to.deep.equal({ dataType: `${XS}integer`, bag: false });
    expect(call('double-add', 0.5, 0.25)).to.equal(0.75);
    expect(call('integer-subtract', 1n, 3n)).to.equal(-2n);
    expect(call('double-multiply', 2, 1.5)).to.equal(3);
    expect(call('integer-multiply', 2n, 3n, 4n)).to.equal(24n);
    expect(call('integer-divide', -7n, 2n)).to.equal(-3n); // truncates toward zero
    expect(call('double-divide', 1, 4)).to.equal(0.25);
    expect(call('integer-mod', -7n, 2n)).to.equal(-1n);
    expect(() => call('integer-divide', 1n, 0n)).to.throw(XacmlProcessingError, /division by zero/);
    expect(() => call('double-divide', 1, 0)).to.throw(XacmlProcessingError, /division by zero/);
    expect(() => call('integer-mod', 1n, 0n)).to.throw(XacmlProcessingError);
    expect(call('integer-abs', -5n)).to.equal(5n);
    expect(call('double-abs', -0.5)).to.equal(0.5);
  });

  it('round is fn:round (half toward positive infinity); floor; numeric conversions', () => {
    expect(call('round', 2.5)).to.equal(3);
    expect(call('round', -2.5)).to.equal(-2);
    expect(call('round', 2.4999)).to.equal(2);
    expect(call('floor', -1.5)).to.equal(-2);
    expect(call('double-to-integer', -3.9)).to.equal(-3n);
    expect(call('double-to-integer', 1e20)).to.equal(100000000000000000000n);
    expect(() => call('double-to-integer', NaN)).to.throw(XacmlProcessingError);
    expect(() => call('double-to-integer', Infinity)).to.throw(XacmlProcessingError);
    expect(call('integer-to-double', 42n)).to.equal(42);
  });

  it('string normalization strips only leading/trailing white space; lower-case', () => {
    expect(call('string-normalize-space', ' \t This  is IT!\n ')).to.equal('This  is IT!');
    expect(call('string-normalize-to-lower-case', 'ÀbC')).to.equal('àbc');
  });

  it('comparisons for integer, double, string, time, date, dateTime', () => {
    expect(call('integer-greater-than', 10n, 9n)).to.equal(true);
    expect(call('integer-less-than-or-equal', 9n, 9n)).to.equal(true);
    expect(call('double-less-than', 1, NaN)).to.equal(false);
    expect(call('double-greater-than-or-equal', NaN, NaN)).to.equal(false);
    expect(call('double-greater-than-or-equal', -Infinity, -Infinity)).to.equal(true);
    expect(call('string-less-than', 'abc', 'abd')).to.equal(true);
    expect(call('string-greater-than', 'b', 'abc')).to.equal(true);
    expect(call('time-less-than', v('time', '08:23:46-05:00'), v('time', '08:23:47-05:00'))).to.equal(true);
    expect(call('date-greater-than', v('date', '2002-03-23'), v('date', '2002-03-22'))).to.equal(true);
    expect(
      call('dateTime-greater-than-or-equal', v('dateTime', '2002-03-22T08:23:47-05:00'), v('dateTime', '2002-03-22T13:23:47Z')),
    ).to.equal(true);
  });

  it('time-in-range: inclusive, across midnight, timezone of the first argument', () => {
    const t = (s: string): unknown => v('time', s);
    expect(call('time-in-range', t('12:00:00Z'), t('09:00:00Z'), t('17:00:00Z'))).to.equal(true);
    expect(call('time-in-range', t('17:00:00Z'), t('09:00:00Z'), t('17:00:00Z'))).to.equal(true);
    expect(call('time-in-range', t('17:00:00.001Z'), t('09:00:00Z'), t('17:00:00Z'))).to.equal(false);
    expect(call('time-in-range', t('23:30:00Z'), t('22:00:00Z'), t('02:00:00Z'))).to.equal(true);
    expect(call('time-in-range', t('01:00:00Z'), t('22:00:00Z'), t('02:00:00Z'))).to.equal(true);
    expect(call('time-in-range', t('12:00:00Z'), t('22:00:00Z'), t('02:00:00Z'))).to.equal(false);
    // Bounds without a timezone take the first argument's: 12:00+02:00 is in 11:00–13:00 (+02:00).
    expect(call('time-in-range', t('12:00:00+02:00'), t('11:00:00'), t('13:00:00'))).to.equal(true);
    // With an explicit timezone on the bounds the instants are compared: 10:00Z–11:00Z excludes it.
    expect(call('time-in-range', t('12:00:00+02:00'), t('11:00:00Z'), t('13:00:00Z'))).to.equal(false);
  });

  it('date arithmetic: day-time exact, year-month clamps to the end of the month', () => {
    const dt = (s: string): unknown => v('dateTime', s);
    const show = (x: unknown): string => fmt('dateTime', x);
    expect(show(call('dateTime-add-dayTimeDuration', dt('2002-12-31T23:00:00-05:00'), v(DTD, 'PT1H0.5S')))).to.equal(
      '2003-01-01T00:00:00.5-05:00',
    );
    expect(show(call('dateTime-subtract-dayTimeDuration', dt('2002-03-01T00:00:00Z'), v(DTD, 'P1D')))).to.equal(
      '2002-02-28T00:00:00Z',
    );
    expect(show(call('dateTime-add-dayTimeDuration', dt('2002-03-01T00:00:00Z'), v(DTD, '-PT0.000001S')))).to.equal(
      '2002-02-28T23:59:59.999999Z',
    );
    expect(show(call('dateTime-add-yearMonthDuration', dt('2004-01-31T10:00:00Z'), v(YMD, 'P1M')))).to.equal(
      '2004-02-29T10:00:00Z',
    );
    expect(show(call('dateTime-subtract-yearMonthDuration', dt('2003-03-31T00:00:00'), v(YMD, 'P1Y1M')))).to.equal(
      '2002-02-28T00:00:00',
    );
    expect(fmt('date', call('date-add-yearMonthDuration', v('date', '2001-08-31'), v(YMD, 'P1Y6M')))).to.equal(
      '2003-02-28',
    );
    expect(fmt('date', call('date-subtract-yearMonthDuration', v('date', '2002-03-22Z'), v(YMD, '-P2M')))).to.equal(
      '2002-05-22Z',
    );
  });

  it('bag functions: one-and-only (error unless exactly one), bag-size, is-in, bag', () => {
    expect(call('string-one-and-only', ['a'])).to.equal('a');
    expect(() => call('string-one-and-only', [])).to.throw(XacmlProcessingError, /got 0/);
    expect(() => call('integer-one-and-only', [1n, 2n])).to.throw(XacmlProcessingError, /got 2/);
    expect(call('double-bag-size', [1, 2, 2])).to.equal(3n);
    expect(call('integer-is-in', 7n, [1n, 7n])).to.equal(true);
    expect(call('dateTime-is-in', v('dateTime', '2002-03-22T13:23:47Z'), [v('dateTime', '2002-03-22T08:23:47-05:00')])).to.equal(true);
    expect(call('rfc822Name-is-in', v(RFC822, 'a@B.com'), [v(RFC822, 'a@b.com')])).to.equal(true);
    expect(call('ipAddress-is-in', v(IP, '10.0.0.1'), [v(IP, '10.0.0.2')])).to.equal(false);
    expect(call('dnsName-bag-size', [v(DNS, 'a.com')])).to.equal(1n);
    expect(call('anyURI-bag')).to.deep.equal([]);
    expect(call('string-bag', 'a', 'b')).to.deep.equal(['a', 'b']);
    expect(fn('string-bag').minArgs).to.equal(0);
    expect(fn('string-bag').returns).to.deep.equal({ dataType: `${XS}string`, bag: true });
  });

  it('set functions use type equality and return no duplicates', () => {
    expect(call('integer-intersection', [1n, 2n, 2n, 3n], [2n, 3n, 4n])).to.deep.equal([2n, 3n]);
    expect(call('string-union', ['a', 'b', 'a'], ['b', 'c'])).to.deep.equal(['a', 'b', 'c']);
    expect(call('string-at-least-one-member-of', ['x'], ['y', 'x'])).to.equal(true);
    expect(call('string-at-least-one-member-of', [], ['y'])).to.equal(false);
    expect(call('string-subset', ['a', 'a'], ['a', 'b'])).to.equal(true);
    expect(call('string-subset', [], [])).to.equal(true);
    expect(call('string-set-equals', ['a', 'b', 'b'], ['b', 'a'])).to.equal(true);
    expect(call('string-set-equals', ['a'], ['a', 'b'])).to.equal(false);
    const t = (s: string): unknown => v('time', s);
    expect(call('time-set-equals', [t('08:23:47-05:00')], [t('13:23:47Z')])).to.equal(true);
    expect(call('x500Name-union', [v(X500, 'cn=a')], [v(X500, 'CN=A')])).to.have.length(1);
  });

  it('string-concatenate and uri-string-concatenate (2.0)', () => {
    expect(call('string-concatenate', 'a', 'b', 'c')).to.equal('abc');
    expect(fn('string-concatenate').minArgs).to.equal(2);
    expect(call('uri-string-concatenate', 'http://x/', 'a', 'b')).to.equal('http://x/ab');
    expect(fn('uri-string-concatenate').returns.dataType).to.equal(`${XS}anyURI`);
    expect(fn('url-string-concatenate').params[0]!.dataType).to.equal(`${XS}anyURI`);
  });

  it('regexp-match is fn:matches with XML Schema regular expressions', () => {
    expect(call('string-regexp-match', 'read|write', 'read')).to.equal(true);
    expect(call('string-regexp-match', 'read|write', 'delete')).to.equal(false);
    expect(call('string-regexp-match', 'J.* K.* Hibbert', 'Julius Hibbert')).to.equal(false);
    expect(call('string-regexp-match', 'ead', 'read')).to.equal(true); // a substring suffices
    expect(call('string-regexp-match', '^ead', 'read')).to.equal(false);
    expect(call('anyURI-regexp-match', '^http://medico\\.com/', 'http://medico.com/record')).to.equal(true);
    expect(call('ipAddress-regexp-match', '^10\\.0\\.', v(IP, '10.0.0.1/255.0.0.0'))).to.equal(true);
    expect(call('dnsName-regexp-match', '\\.example\\.com$', v(DNS, 'www.example.com'))).to.equal(true);
    expect(call('rfc822Name-regexp-match', '@medico\\.com$', v(RFC822, 'bs@medico.com'))).to.equal(true);
    expect(call('x500Name-regexp-match', 'O=Medico', v(X500, 'CN=Bart,O=Medico'))).to.equal(true);
    expect(() => call('string-regexp-match', '(', 'x')).to.throw(XacmlProcessingError, /invalid regular expression/);
  });

  it('regexp-match compiles a constant pattern once through specialize', () => {
    const f = fn('string-regexp-match');
    const impl = f.specialize!([true, false], ['^[a-z-[aeiou]]+$', undefined]);
    expect(impl(['^[a-z-[aeiou]]+$', 'bcd'])).to.equal(true);
    expect(impl(['^[a-z-[aeiou]]+$', 'bad'])).to.equal(false);
    const broken = f.specialize!([true, false], ['[', undefined]);
    expect(() => broken(['[', 'x'])).to.throw(XacmlProcessingError);
    const dynamic = f.specialize!([false, false], []);
    expect(dynamic(['b', 'abc'])).to.equal(true);
  });

  it('rfc822Name-match follows A.3.14: mailbox, domain, sub-domain', () => {
    const m = (pattern: string, name: string): unknown => call('rfc822Name-match', pattern, v(RFC822, name));
    expect(m('Anderson@sun.com', 'Anderson@SUN.COM')).to.equal(true);
    expect(m('Anderson@sun.com', 'anderson@sun.com')).to.equal(false);
    expect(m('Anderson@sun.com', 'Anderson@east.sun.com')).to.equal(false);
    expect(m('sun.com', 'anderson@sun.com')).to.equal(true);
    expect(m('sun.com', 'Baxter@SUN.COM')).to.equal(true);
    expect(m('sun.com', 'Anderson@east.sun.com')).to.equal(false);
    expect(m('.east.sun.com', 'anderson@isrg.east.sun.com')).to.equal(true);
    expect(m('.east.sun.com', 'anderson@ipl.EAST.sun.com')).to.equal(true);
    expect(m('.east.sun.com', 'anderson@east.sun.com')).to.equal(false);
    expect(fn('rfc822Name-match').params.map((p) => p.dataType)).to.deep.equal([`${XS}string`, RFC822]);
  });

  it('x500Name-match: the first name is a terminal RDN sequence of the second', () => {
    const m = (a: string, b: string): unknown => call('x500Name-match', v(X500, a), v(X500, b));
    expect(m('O=Medico Corp,C=US', 'cn=John Smith,o=Medico Corp, c=US')).to.equal(true);
    expect(m('C=US', 'cn=John Smith,o=Medico Corp,c=US')).to.equal(true);
    expect(m('cn=John Smith,o=Medico Corp,c=US', 'cn=John Smith,o=Medico Corp,c=US')).to.equal(true);
    expect(m('cn=John Smith,o=Medico Corp', 'cn=John Smith,o=Medico Corp,c=US')).to.equal(false);
    expect(m('o=Medico Corp,c=US,dc=x', 'o=Medico Corp,c=US')).to.equal(false);
  });
});

describe('xacml functions: specialized call sites', () => {
  it('rfc822Name-match with a constant pattern behaves as the generic one', () => {
    const f = functions.get('urn:oasis:names:tc:xacml:1.0:function:rfc822Name-match')!;
    const name = dataTypes.get('urn:oasis:names:tc:xacml:1.0:data-type:rfc822Name')!;
    for (const pattern of ['Anderson@sun.com', 'sun.com', '.sun.com']) {
      const impl = f.specialize!([true, false], [pattern, undefined]);
      for (const mailbox of ['Anderson@SUN.com', 'anderson@sun.com', 'x@east.sun.com']) {
        const args = [pattern, name.parse(mailbox)];
        expect(impl(args), `${pattern} ~ ${mailbox}`).to.equal(f.impl(args));
      }
    }
  });
});
