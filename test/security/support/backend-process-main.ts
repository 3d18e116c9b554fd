/**
 * A test backend in a process of its own: the echo backend (test/gateway/helpers.ts) or the
 * example's petstore; prints its URL as a line, answers each `seen` line of its standard input
 * with a line of the requests its echo received (`[{"method","url"}]`, the petstore's: `[]`), and
 * stops when its standard input closes (the test's end, or the test runner gone).
 *
 * Its own process, because a latency measured through the gateway includes the backend's: in the
 * test runner, whose heap has grown over the whole suite, a collection pause of the runner
 * counted as the gateway's delay.
 *
 * Usage: backend-process-main.ts echo|petstore
 */
import { createInterface } from 'node:readline';
import { startPetstoreBackend } from '../../../examples/petstore/backend.js';
import { echoBackend } from '../../gateway/helpers.js';

const kind = process.argv[2];
if (kind !== 'echo' && kind !== 'petstore') throw new Error('usage: backend-process-main.ts echo|petstore');
const backend = kind === 'echo' ? await echoBackend() : await startPetstoreBackend({ port: 0 });
const seen = (): Array<{ method: string; url: string }> =>
  'seen' in backend ? backend.seen.map(({ method, url }) => ({ method, url })) : [];
process.stdout.write(`${backend.url}\n`);
const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  if (line === 'seen') process.stdout.write(`${JSON.stringify(seen())}\n`);
});
lines.on('close', () => void backend.stop().then(() => process.exit(0)));
