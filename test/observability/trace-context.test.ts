/** The W3C trace context rules the gateway applies to what a client sends. */
import { expect } from 'chai';
import { formatTraceparent, incomingTrace, validTracestate } from '../../src/observability/trace-context.js';

const TP = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

describe('W3C trace context', () => {
  it('reads a version 00 traceparent, and a later version by its first fields', () => {
    expect(incomingTrace(TP, undefined)).to.deep.include({
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: '00f067aa0ba902b7',
      flags: 1,
      traceparent: TP,
    });
    const later = `cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-what-comes-next`;
    expect(incomingTrace(later, undefined)).to.deep.include({ spanId: '00f067aa0ba902b7', flags: 0, traceparent: later });
  });

  it('refuses version ff, zero ids, upper case, wrong lengths, several headers and arrays', () => {
    for (const bad of [
      'ff' + TP.slice(2),
      TP.replace('4bf92f3577b34da6a3ce929d0e0e4736', '0'.repeat(32)),
      TP.replace('00f067aa0ba902b7', '0'.repeat(16)),
      TP.toUpperCase(),
      TP.slice(0, 54),
      `${TP}0`,
      `${TP}-01`,
      `${TP}, ${TP}`,
      `00-${'g'.repeat(32)}-00f067aa0ba902b7-01`,
    ]) {
      expect(incomingTrace(bad, undefined), bad).to.equal(undefined);
    }
    expect(incomingTrace([TP, TP], undefined)).to.equal(undefined);
  });

  it('keeps a valid tracestate as received and drops an invalid one', () => {
    expect(incomingTrace(TP, 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE')?.tracestate).to.equal('rojo=00f067aa0ba902b7,congo=t61rcWkgMzE');
    expect(incomingTrace(TP, ['a=1', 'b=2'])?.tracestate).to.equal('a=1,b=2');
    for (const good of ['a=1', ' a=1 ,\tb=2 ', 'tenant@system=v', 'a=1,,b=2', 'a= x']) expect(validTracestate(good), good).to.equal(true);
    const many = Array.from({ length: 33 }, (_, i) => `k${i}=v`).join(',');
    for (const bad of ['A=1', 'a', '=1', 'a=1,a=2', 'a=x,y', 'a=b=c', 'a=\u00e9', many, `a=${'x'.repeat(257)}`]) {
      expect(validTracestate(bad), bad).to.equal(false);
    }
  });

  it('formats a traceparent of version 00', () => {
    expect(formatTraceparent('4bf92f3577b34da6a3ce929d0e0e4736', '00f067aa0ba902b7', 1)).to.equal(TP);
  });
});
