/**
 * The operators' work pool on its own: its options checked at creation, a job past the worker's
 * heap stopped with the budget named, a waiting job dropped when its operator goes, and jobs
 * answered by a worker started from the sources.
 */
import { expect } from 'chai';
import { createGateway, GatewayError } from '../../../src/index.js';
import { OperatorWorkPool, operatorWorkLimits } from '../../../src/configuration/work/pool.js';
import { optionChecks } from '../../../src/options.js';
import { openConfig } from '../../gateway/helpers.js';
import { PERMIT_ALL, regexHeavyPolicy } from '../../security/support/operator-documents.js';

const limits = (options: object) => operatorWorkLimits(options, optionChecks('createGateway'));

describe('operator work pool', function () {
  this.timeout(60_000);
  let pool: OperatorWorkPool | undefined;
  afterEach(async () => {
    await pool?.close();
    pool = undefined;
  });

  it('checks its options at creation, naming the option', () => {
    expect(limits({})).to.deep.equal({
      workers: 1,
      maxQueued: 4,
      timeoutMs: 10_000,
      maxMemoryMb: 512,
      maxPolicyBytes: 2_097_152,
      maxOpenApiBytes: 2_097_152,
      maxCompileMs: 100,
    });
    expect(() => createGateway({ config: openConfig('http://127.0.0.1:9'), operatorWork: { maxCompileMs: 0 } })).to.throw(
      TypeError,
      'createGateway: options.operatorWork.maxCompileMs must be a positive integer',
    );
    expect(() => createGateway({ config: openConfig('http://127.0.0.1:9'), operatorWork: { maxCompileMS: 50 } as never })).to.throw(
      TypeError,
      /options\.operatorWork\.maxCompileMS is not an option \(did you mean "maxCompileMs"\?\)/,
    );
    expect(() => createGateway({ config: openConfig('http://127.0.0.1:9'), operatorWork: { workers: 0 } })).to.throw(
      TypeError,
      'createGateway: options.operatorWork.workers must be a positive integer',
    );
    expect(() => createGateway({ config: openConfig('http://127.0.0.1:9'), operatorWork: { timeoutMs: '5s' as never } })).to.throw(
      TypeError,
      'createGateway: options.operatorWork.timeoutMs must be a positive integer',
    );
    expect(() => createGateway({ config: openConfig('http://127.0.0.1:9'), operatorWork: [] as never })).to.throw(
      TypeError,
      'createGateway: options.operatorWork must be an object',
    );
  });

  it("answers a job from a worker, with the evaluator's issue of a bad policy", async () => {
    pool = new OperatorWorkPool(limits({}));
    expect(await pool.run('checkPolicy', { text: PERMIT_ALL, references: [], file: 'p.xml', at: 'policy' })).to.deep.equal([]);
    const issues = await pool.run('checkPolicy', { text: '<Policy/>', references: [], file: 'p.xml', at: 'policy' });
    expect(issues).to.have.length(1);
    expect(issues[0]).to.include({ path: 'policy', file: 'p.xml', line: 1 });
  });

  it("a job past the worker's heap is stopped, naming the memory budget; the next job is answered", async () => {
    pool = new OperatorWorkPool(limits({ maxMemoryMb: 24, timeoutMs: 120_000 }));
    const err = await pool.run('checkPolicy', { text: regexHeavyPolicy(), references: [], file: 'p.xml', at: 'policy' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(GatewayError);
    expect(err).to.include({
      code: 'ERR_OPERATOR_WORK_OVER_BUDGET',
      status: 422,
      message: 'The work went past its budget of 24 MiB of memory and was stopped',
    });
    expect(await pool.run('checkPolicy', { text: PERMIT_ALL, references: [], file: 'p.xml', at: 'policy' })).to.deep.equal([]);
  });

  it('a waiting job whose operator has gone is dropped, and leaves room in the queue', async () => {
    pool = new OperatorWorkPool(limits({ maxQueued: 1, timeoutMs: 120_000 }));
    const running = pool.run('checkPolicy', { text: regexHeavyPolicy(600), references: [], file: 'p.xml', at: 'policy' });
    const gone = new AbortController();
    const waiting = pool.run('checkPolicy', { text: PERMIT_ALL, references: [], file: 'p.xml', at: 'policy' }, gone.signal);
    const refused = await pool
      .run('checkPolicy', { text: PERMIT_ALL, references: [], file: 'p.xml', at: 'policy' })
      .catch((e: unknown) => e);
    expect(refused).to.include({ code: 'ERR_OPERATOR_WORK_BUSY', status: 503, retryAfter: 10 });
    gone.abort();
    expect(await waiting.catch((e: unknown) => (e as Error).name)).to.equal('AbortError');
    const next = pool.run('checkPolicy', { text: PERMIT_ALL, references: [], file: 'p.xml', at: 'policy' });
    expect(await running).to.deep.equal([]);
    expect(await next).to.deep.equal([]);
  });
});
