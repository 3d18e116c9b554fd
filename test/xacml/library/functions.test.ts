import assert from 'node:assert/strict';
import { dataTypes } from '../../../src/xacml/datatypes/index.js';
import { XacmlProcessingError } from '../../../src/xacml/errors.js';
import { functions, type FunctionSpec } from '../../../src/xacml/functions/index.js';

const XS = 'http://www.w3.org/2001/XMLSchema#';
const DTD = 'http://www.w3.org/TR/2002/WD-xquery-operators-20020816#dayTimeDuration';
const YMD = 'http://www.w3.org/TR/2002/WD-xquery-operators-20020816#yearMonthDuration';
const RFC822 = 'urn:oasis:names:tc:xacml:1.0:data-type:rfc822Name';
const X500 = 'urn:oasis:names:tc:xacml:1.0:data-type:x500Name';
const IP = 'urn:oasis:names:tc:xacml:2.0:data-type:ipAddress';
const DNS = 'urn:oasis:names:tc:xacml:2.0:data-type:dnsName';

function fn(name: string): FunctionSpec {
  const f =
    functions.get(`urn:oasis:names:tc:xacml:1.0:function:${name}`) ?? functions.get(`urn:oasis:names:tc:xacml:2.0:function:${name}`);
  if (!f) throw new Error(`no function ${name}`);
  return f;
}
const v = (type: string, lexical: string): unknown => dataTypes.get(type.includes(':') ? type : XS + type)!.parse(lexical);
const fmt = (type: string, value: unknown): string => dataTypes.get(type.includes(':') ? type : XS + type)!.format(value);
const call = (name: string, ...args: unknown[]): unknown => fn(name).impl(args);

describe('xacml functions', () => {
  it('are registered in the namespace where XACML 2.0 defines them', () => {
    assert.equal(functions.has('urn:oasis:names:tc:xacml:1.0:function:string-equal'), true);
    assert.equal(functions.has('urn:oasis:names:tc:xacml:2.0:function:string-equal'), false);
    assert.equal(functions.has('urn:oasis:names:tc:xacml:2.0:function:time-in-range'), true);
    assert.equal(functions.has('urn:oasis:names:tc:xacml:2.0:function:string-concatenate'), true);
    assert.equal(functions.has('urn:oasis:names:tc:xacml:1.0:function:string-regexp-match'), true);
    assert.equal(functions.has('urn:oasis:names:tc:xacml:2.0:function:anyURI-regexp-match'), true);
    assert.equal(functions.has('urn:oasis:names:tc:xacml:2.0:function:ipAddress-bag'), true);
    for (const evaluatorOwned of ['and', 'or', 'n-of', 'not', 'any-of', 'map', 'xpath-node-count']) {
      assert.equal(functions.has(`urn:oasis:names:tc:xacml:1.0:function:${evaluatorOwned}`), false);
    }
  });

  it('equality of every type uses the type equality, not JavaScript identity', () => {
    assert.equal(call('integer-equal', 7n, v('integer', '+007')), true);
    assert.equal(call('double-equal', NaN, NaN), false);
    assert.equal(call('dateTime-equal', v('dateTime', '2002-03-22T08:23:47-05:00'), v('dateTime', '2002-03-22T13:23:47Z')), true);
    assert.equal(call('dayTimeDuration-equal', v(DTD, 'P1D'), v(DTD, 'PT24H')), true);
    assert.equal(call('yearMonthDuration-equal', v(YMD, 'P1Y'), v(YMD, 'P13M')), false);
    assert.equal(call('rfc822Name-equal', v(RFC822, 'a@X.org'), v(RFC822, 'a@x.ORG')), true);
    assert.equal(call('x500Name-equal', v(X500, 'cn=A, o=B'), v(X500, 'CN=a,O=b')), true);
    assert.equal(call('hexBinary-equal', v('hexBinary', 'ab'), v('hexBinary', 'AB')), true);
    assert.equal(call('string-equal', 'a', 'A'), false);
    assert.deepEqual(fn('boolean-equal').params, [
      { dataType: `${XS}boolean`, bag: false },
      { dataType: `${XS}boolean`, bag: false },
    ]);
  });

  it('integer and double arithmetic; division by zero is a processing error', () => {
    assert.equal(call('integer-add', 1n, 2n, 3n), 6n);
    assert.equal(fn('integer-add').minArgs, 2);
    assert.deepEqual(fn('integer-add').variadic, { dataType: `${XS}integer`, bag: false });
    assert.equal(call('double-add', 0.5, 0.25), 0.75);
    assert.equal(call('integer-subtract', 1n, 3n), -2n);
    assert.equal(call('double-multiply', 2, 1.5), 3);
    assert.equal(call('integer-multiply', 2n, 3n, 4n), 24n);
    assert.equal(call('integer-divide', -7n, 2n), -3n); // truncates toward zero
    assert.equal(call('double-divide', 1, 4), 0.25);
    assert.equal(call('integer-mod', -7n, 2n), -1n);
    assert.throws(
      () => call('integer-divide', 1n, 0n),
      (e: unknown) => e instanceof XacmlProcessingError && /division by zero/.test(e.message),
    );
    assert.throws(
      () => call('double-divide', 1, 0),
      (e: unknown) => e instanceof XacmlProcessingError && /division by zero/.test(e.message),
    );
    assert.throws(() => call('integer-mod', 1n, 0n), XacmlProcessingError);
    assert.equal(call('integer-abs', -5n), 5n);
    assert.equal(call('double-abs', -0.5), 0.5);
  });

  it('round is fn:round (half toward positive infinity); floor; numeric conversions', () => {
    assert.equal(call('round', 2.5), 3);
    assert.equal(call('round', -2.5), -2);
    assert.equal(call('round', 2.4999), 2);
    assert.equal(call('floor', -1.5), -2);
    assert.equal(call('double-to-integer', -3.9), -3n);
    assert.equal(call('double-to-integer', 1e20), 100000000000000000000n);
    assert.throws(() => call('double-to-integer', NaN), XacmlProcessingError);
    assert.throws(() => call('double-to-integer', Infinity), XacmlProcessingError);
    assert.equal(call('integer-to-double', 42n), 42);
  });

  it('string normalization strips only leading/trailing white space; lower-case', () => {
    assert.equal(call('string-normalize-space', ' \t This  is IT!\n '), 'This  is IT!');
    assert.equal(call('string-normalize-to-lower-case', 'ÀbC'), 'àbc');
  });

  it('comparisons for integer, double, string, time, date, dateTime', () => {
    assert.equal(call('integer-greater-than', 10n, 9n), true);
    assert.equal(call('integer-less-than-or-equal', 9n, 9n), true);
    assert.equal(call('double-less-than', 1, NaN), false);
    assert.equal(call('double-greater-than-or-equal', NaN, NaN), false);
    assert.equal(call('double-greater-than-or-equal', -Infinity, -Infinity), true);
    assert.equal(call('string-less-than', 'abc', 'abd'), true);
    assert.equal(call('string-greater-than', 'b', 'abc'), true);
    assert.equal(call('time-less-than', v('time', '08:23:46-05:00'), v('time', '08:23:47-05:00')), true);
    assert.equal(call('date-greater-than', v('date', '2002-03-23'), v('date', '2002-03-22')), true);
    assert.equal(
      call('dateTime-greater-than-or-equal', v('dateTime', '2002-03-22T08:23:47-05:00'), v('dateTime', '2002-03-22T13:23:47Z')),
      true,
    );
  });

  it('time-in-range: inclusive, across midnight, timezone of the first argument', () => {
    const t = (s: string): unknown => v('time', s);
    assert.equal(call('time-in-range', t('12:00:00Z'), t('09:00:00Z'), t('17:00:00Z')), true);
    assert.equal(call('time-in-range', t('17:00:00Z'), t('09:00:00Z'), t('17:00:00Z')), true);
    assert.equal(call('time-in-range', t('17:00:00.001Z'), t('09:00:00Z'), t('17:00:00Z')), false);
    assert.equal(call('time-in-range', t('23:30:00Z'), t('22:00:00Z'), t('02:00:00Z')), true);
    assert.equal(call('time-in-range', t('01:00:00Z'), t('22:00:00Z'), t('02:00:00Z')), true);
    assert.equal(call('time-in-range', t('12:00:00Z'), t('22:00:00Z'), t('02:00:00Z')), false);
    // Bounds without a timezone take the first argument's: 12:00+02:00 is in 11:00–13:00 (+02:00).
    assert.equal(call('time-in-range', t('12:00:00+02:00'), t('11:00:00'), t('13:00:00')), true);
    // With an explicit timezone on the bounds the instants are compared: 10:00Z–11:00Z excludes it.
    assert.equal(call('time-in-range', t('12:00:00+02:00'), t('11:00:00Z'), t('13:00:00Z')), false);
  });

  it('date arithmetic: day-time exact, year-month clamps to the end of the month', () => {
    const dt = (s: string): unknown => v('dateTime', s);
    const show = (x: unknown): string => fmt('dateTime', x);
    assert.equal(
      show(call('dateTime-add-dayTimeDuration', dt('2002-12-31T23:00:00-05:00'), v(DTD, 'PT1H0.5S'))),
      '2003-01-01T00:00:00.5-05:00',
    );
    assert.equal(show(call('dateTime-subtract-dayTimeDuration', dt('2002-03-01T00:00:00Z'), v(DTD, 'P1D'))), '2002-02-28T00:00:00Z');
    assert.equal(
      show(call('dateTime-add-dayTimeDuration', dt('2002-03-01T00:00:00Z'), v(DTD, '-PT0.000001S'))),
      '2002-02-28T23:59:59.999999Z',
    );
    assert.equal(show(call('dateTime-add-yearMonthDuration', dt('2004-01-31T10:00:00Z'), v(YMD, 'P1M'))), '2004-02-29T10:00:00Z');
    assert.equal(show(call('dateTime-subtract-yearMonthDuration', dt('2003-03-31T00:00:00'), v(YMD, 'P1Y1M'))), '2002-02-28T00:00:00');
    assert.equal(fmt('date', call('date-add-yearMonthDuration', v('date', '2001-08-31'), v(YMD, 'P1Y6M'))), '2003-02-28');
    assert.equal(fmt('date', call('date-subtract-yearMonthDuration', v('date', '2002-03-22Z'), v(YMD, '-P2M'))), '2002-05-22Z');
  });

  it('bag functions: one-and-only (error unless exactly one), bag-size, is-in, bag', () => {
    assert.equal(call('string-one-and-only', ['a']), 'a');
    assert.throws(
      () => call('string-one-and-only', []),
      (e: unknown) => e instanceof XacmlProcessingError && /got 0/.test(e.message),
    );
    assert.throws(
      () => call('integer-one-and-only', [1n, 2n]),
      (e: unknown) => e instanceof XacmlProcessingError && /got 2/.test(e.message),
    );
    assert.equal(call('double-bag-size', [1, 2, 2]), 3n);
    assert.equal(call('integer-is-in', 7n, [1n, 7n]), true);
    assert.equal(call('dateTime-is-in', v('dateTime', '2002-03-22T13:23:47Z'), [v('dateTime', '2002-03-22T08:23:47-05:00')]), true);
    assert.equal(call('rfc822Name-is-in', v(RFC822, 'a@B.com'), [v(RFC822, 'a@b.com')]), true);
    assert.equal(call('ipAddress-is-in', v(IP, '10.0.0.1'), [v(IP, '10.0.0.2')]), false);
    assert.equal(call('dnsName-bag-size', [v(DNS, 'a.com')]), 1n);
    assert.deepEqual(call('anyURI-bag'), []);
    assert.deepEqual(call('string-bag', 'a', 'b'), ['a', 'b']);
    assert.equal(fn('string-bag').minArgs, 0);
    assert.deepEqual(fn('string-bag').returns, { dataType: `${XS}string`, bag: true });
  });

  it('set functions use type equality and return no duplicates', () => {
    assert.deepEqual(call('integer-intersection', [1n, 2n, 2n, 3n], [2n, 3n, 4n]), [2n, 3n]);
    assert.deepEqual(call('string-union', ['a', 'b', 'a'], ['b', 'c']), ['a', 'b', 'c']);
    assert.equal(call('string-at-least-one-member-of', ['x'], ['y', 'x']), true);
    assert.equal(call('string-at-least-one-member-of', [], ['y']), false);
    assert.equal(call('string-subset', ['a', 'a'], ['a', 'b']), true);
    assert.equal(call('string-subset', [], []), true);
    assert.equal(call('string-set-equals', ['a', 'b', 'b'], ['b', 'a']), true);
    assert.equal(call('string-set-equals', ['a'], ['a', 'b']), false);
    const t = (s: string): unknown => v('time', s);
    assert.equal(call('time-set-equals', [t('08:23:47-05:00')], [t('13:23:47Z')]), true);
    assert.equal((call('x500Name-union', [v(X500, 'cn=a')], [v(X500, 'CN=A')]) as unknown[]).length, 1);
  });

  it('string-concatenate and uri-string-concatenate (2.0)', () => {
    assert.equal(call('string-concatenate', 'a', 'b', 'c'), 'abc');
    assert.equal(fn('string-concatenate').minArgs, 2);
    assert.equal(call('uri-string-concatenate', 'http://x/', 'a', 'b'), 'http://x/ab');
    assert.equal(fn('uri-string-concatenate').returns.dataType, `${XS}anyURI`);
    assert.equal(fn('url-string-concatenate').params[0]!.dataType, `${XS}anyURI`);
  });

  it('regexp-match is fn:matches with XML Schema regular expressions', () => {
    assert.equal(call('string-regexp-match', 'read|write', 'read'), true);
    assert.equal(call('string-regexp-match', 'read|write', 'delete'), false);
    assert.equal(call('string-regexp-match', 'J.* K.* Hibbert', 'Julius Hibbert'), false);
    assert.equal(call('string-regexp-match', 'ead', 'read'), true); // a substring suffices
    assert.equal(call('string-regexp-match', '^ead', 'read'), false);
    assert.equal(call('anyURI-regexp-match', '^http://medico\\.com/', 'http://medico.com/record'), true);
    assert.equal(call('ipAddress-regexp-match', '^10\\.0\\.', v(IP, '10.0.0.1/255.0.0.0')), true);
    assert.equal(call('dnsName-regexp-match', '\\.example\\.com$', v(DNS, 'www.example.com')), true);
    assert.equal(call('rfc822Name-regexp-match', '@medico\\.com$', v(RFC822, 'bs@medico.com')), true);
    assert.equal(call('x500Name-regexp-match', 'O=Medico', v(X500, 'CN=Bart,O=Medico')), true);
    assert.throws(
      () => call('string-regexp-match', '(', 'x'),
      (e: unknown) => e instanceof XacmlProcessingError && /invalid regular expression/.test(e.message),
    );
  });

  it('regexp-match compiles a constant pattern once through specialize', () => {
    const f = fn('string-regexp-match');
    const impl = f.specialize!([true, false], ['^[a-z-[aeiou]]+$', undefined]);
    assert.equal(impl(['^[a-z-[aeiou]]+$', 'bcd']), true);
    assert.equal(impl(['^[a-z-[aeiou]]+$', 'bad']), false);
    const broken = f.specialize!([true, false], ['[', undefined]);
    assert.throws(() => broken(['[', 'x']), XacmlProcessingError);
    const dynamic = f.specialize!([false, false], []);
    assert.equal(dynamic(['b', 'abc']), true);
  });

  it('rfc822Name-match follows A.3.14: mailbox, domain, sub-domain', () => {
    const m = (pattern: string, name: string): unknown => call('rfc822Name-match', pattern, v(RFC822, name));
    assert.equal(m('Anderson@sun.com', 'Anderson@SUN.COM'), true);
    assert.equal(m('Anderson@sun.com', 'anderson@sun.com'), false);
    assert.equal(m('Anderson@sun.com', 'Anderson@east.sun.com'), false);
    assert.equal(m('sun.com', 'anderson@sun.com'), true);
    assert.equal(m('sun.com', 'Baxter@SUN.COM'), true);
    assert.equal(m('sun.com', 'Anderson@east.sun.com'), false);
    assert.equal(m('.east.sun.com', 'anderson@isrg.east.sun.com'), true);
    assert.equal(m('.east.sun.com', 'anderson@ipl.EAST.sun.com'), true);
    assert.equal(m('.east.sun.com', 'anderson@east.sun.com'), false);
    assert.deepEqual(
      fn('rfc822Name-match').params.map((p) => p.dataType),
      [`${XS}string`, RFC822],
    );
  });

  it('x500Name-match: the first name is a terminal RDN sequence of the second', () => {
    const m = (a: string, b: string): unknown => call('x500Name-match', v(X500, a), v(X500, b));
    assert.equal(m('O=Medico Corp,C=US', 'cn=John Smith,o=Medico Corp, c=US'), true);
    assert.equal(m('C=US', 'cn=John Smith,o=Medico Corp,c=US'), true);
    assert.equal(m('cn=John Smith,o=Medico Corp,c=US', 'cn=John Smith,o=Medico Corp,c=US'), true);
    assert.equal(m('cn=John Smith,o=Medico Corp', 'cn=John Smith,o=Medico Corp,c=US'), false);
    assert.equal(m('o=Medico Corp,c=US,dc=x', 'o=Medico Corp,c=US'), false);
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
        assert.equal(impl(args), f.impl(args), `${pattern} ~ ${mailbox}`);
      }
    }
  });
});
