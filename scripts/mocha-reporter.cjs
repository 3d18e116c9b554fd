'use strict';
/**
 * Mocha's spec reporter, then the slowest test files: the time each file's tests and hooks took
 * (in parallel runs the files overlap, so these add up to more than the run's wall time). Keeps
 * the suite's cost in sight for whoever adds the next slow file.
 */
const path = require('node:path');
const Mocha = require('mocha');

const { EVENT_TEST_END, EVENT_HOOK_END, EVENT_RUN_END } = Mocha.Runner.constants;
const SHOWN = 20;

/** The file a test or hook belongs to (its own, or its nearest suite's). */
function fileOf(runnable) {
  for (let at = runnable; at; at = at.parent) if (at.file) return at.file;
  return undefined;
}

class SpecWithSlowestFiles extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const spent = new Map();
    const add = (runnable) => {
      const file = fileOf(runnable);
      if (file !== undefined && typeof runnable.duration === 'number') spent.set(file, (spent.get(file) ?? 0) + runnable.duration);
    };
    runner.on(EVENT_TEST_END, add);
    runner.on(EVENT_HOOK_END, add);
    runner.once(EVENT_RUN_END, () => {
      const slowest = [...spent].sort((a, b) => b[1] - a[1]).slice(0, SHOWN);
      Mocha.reporters.Base.consoleLog(`\n  The ${slowest.length} slowest files (seconds of tests and hooks):`);
      for (const [file, ms] of slowest)
        Mocha.reporters.Base.consoleLog(`  ${(ms / 1000).toFixed(1).padStart(7)}  ${path.relative(process.cwd(), file)}`);
    });
  }
}

module.exports = SpecWithSlowestFiles;
