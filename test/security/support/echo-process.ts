/**
 * The echo backend (test/gateway/helpers.ts) in a process of its own: prints its URL as a line,
 * and stops when its standard input closes (the test's end, or the test runner gone).
 *
 * Its own process, because a latency measured through the gateway includes the backend's: in the
 * test runner, whose heap has grown over the whole suite, a collection pause of the runner
 * counted as the gateway's delay.
 *
 * Usage: echo-process.ts
 */
import { echoBackend } from '../../gateway/helpers.js';

const echo = await echoBackend();
process.stdout.write(`${echo.url}\n`);
process.stdin.resume();
process.stdin.on('end', () => void echo.stop().then(() => process.exit(0)));
