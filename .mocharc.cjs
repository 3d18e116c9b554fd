'use strict';
// Mocha's settings for `npm test`. The files run in parallel, one more than the machine's cores
// (most of a file's time is spent waiting on its servers), the known slow ones first so that no
// long file starts last; then (`MOCHA_ALONE=1`, the second mocha of `npm test`) the files that
// bound how long an API call waits while the gateway works hard, one at a time, so that what they
// measure is the gateway and not neighbours as heavy as themselves. Each file starts its own servers on port 0 and keeps its own PostgreSQL
// schema, Redis key prefix and temporary folder, so files never see each other's state.
//
// `npx mocha test/some.test.ts` runs that file alone: the spec list applies only when no test
// file is named on the command line.
const { readdirSync } = require('node:fs');
const os = require('node:os');
const path = require('node:path');

/** Every test file under `dir`, as a path relative to the project's root. */
function testFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(file);
    return entry.name.endsWith('.test.ts') ? [file] : [];
  });
}

/** Files that take a minute or more (the reporter's list of a run): started first. */
const SLOW_FIRST = [
  'test/server/worker-crash.test.ts',
  'test/security/operator-work.test.ts',
  'test/server/record-journal.test.ts',
  'test/monitoring/console-browser.test.ts',
  'test/security/operator-sessions.test.ts',
  'test/security/traffic-what-if-work.test.ts',
  'test/server/cli.test.ts',
  'test/server/slot-release.test.ts',
  'test/docs/run-samples.test.ts',
  'test/server/conventions.test.ts',
  'test/server/instances.test.ts',
  'test/docs/guides.test.ts',
  'test/security/operation-templates.test.ts',
  'test/server/supervisor.test.ts',
  'test/configuration/page-browser.test.ts',
  'test/security/xacml-redos.test.ts',
  'test/security/admin-cookie.test.ts',
  'test/server/tls.test.ts',
  'test/security/admin-audit-flood.test.ts',
  'test/package/consumer.test.ts',
  'test/operators/access.test.ts',
  'test/server/readiness.test.ts',
  'test/security/token-flood.test.ts',
  'test/docs/getting-started.test.ts',
];

/** Files that measure the gateway's own event-loop delay under heavy work: run alone (see above). */
const ALONE = [
  'test/security/operator-work.test.ts',
  'test/security/traffic-what-if-work.test.ts',
  'test/security/operation-templates.test.ts',
  'test/security/xacml-redos.test.ts',
  'test/security/admin-audit-flood.test.ts',
  'test/security/token-body.test.ts',
  'test/security/xacml-selector-headers.test.ts',
];

const named = process.argv.slice(2).some((arg) => /\.test\.ts$/.test(arg) || arg.includes('*'));
const alone = process.env.MOCHA_ALONE === '1';
const all = testFiles('test').sort();
const ordered = [...SLOW_FIRST.filter((file) => all.includes(file)), ...all.filter((file) => !SLOW_FIRST.includes(file))];
const spec = named ? undefined : alone ? ALONE.filter((file) => all.includes(file)) : ordered.filter((file) => !ALONE.includes(file));

module.exports = {
  'node-option': ['import=tsx'],
  extension: ['ts'],
  ...(spec === undefined ? {} : { spec }),
  // Alone: still a process per file, one at a time.
  parallel: true,
  jobs: alone ? 1 : os.availableParallelism() + 1,
  reporter: './scripts/mocha-reporter.cjs',
  // How long a test or hook may run before it is given up: room for a busy machine, where a
  // process takes seconds to start. A test's own bounds are assertions, never this.
  timeout: 60000,
  exit: true,
};
