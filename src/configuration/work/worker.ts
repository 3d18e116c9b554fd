/**
 * A worker thread of the operators' work: runs one job at a time (`jobs.ts`) and posts its answer
 * as plain data. Started and ended by `pool.ts`.
 *
 * @module
 */
import { parentPort } from 'node:worker_threads';
import { jobs, type JobKind } from './jobs.js';
import { transferablesOf } from './transfer.js';

const port = parentPort;
if (port === null) throw new Error('configuration/work/worker.js runs in a worker thread');

// The OpenAPI parser is loaded before the worker says it is ready: a job's budget is its work.
await Promise.all([import('@readme/openapi-parser'), import('js-yaml')]);

port.on('message', ({ kind, input }: { kind: JobKind; input: never }) => {
  Promise.resolve()
    .then(() => jobs[kind](input))
    .then(
      (value) => port.postMessage({ ok: true, value }, transferablesOf(value)),
      (err: unknown) => port.postMessage({ ok: false, message: String((err as Error)?.message ?? err) }),
    );
});
port.postMessage({ ready: true });
